<?php
// One web request with curl_share_init_persistent() (PHP 8.5): the worker
// process keeps the handle, and its connections, after the request ends.
$sh = curl_share_init_persistent([CURL_LOCK_DATA_DNS, CURL_LOCK_DATA_CONNECT, CURL_LOCK_DATA_SSL_SESSION]);

for ($i = 0; $i < CALLS; $i++) {
    $ch = curl_init(API_URL);
    curl_setopt($ch, CURLOPT_SHARE, $sh);
    curl_setopt_array($ch, API_OPTIONS);
    curl_exec($ch);
    report($ch);
}
