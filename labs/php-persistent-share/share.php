<?php
// One web request with curl_share_init(): the share handle, and with it the
// DNS cache, the connections and the TLS sessions, ends with the request.
$sh = curl_share_init();
curl_share_setopt($sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
curl_share_setopt($sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
curl_share_setopt($sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);

for ($i = 0; $i < CALLS; $i++) {
    $ch = curl_init(API_URL);
    curl_setopt($ch, CURLOPT_SHARE, $sh);
    curl_setopt_array($ch, API_OPTIONS);
    curl_exec($ch);
    report($ch);
}
