<?php
// curl_share_init_persistent() with this request's set of options: the
// same set in any order is the same handle; another set is another one.
// SHARE_OPTIONS is the block's share_sets entry for this request, e.g.
// [CURL_LOCK_DATA_SSL_SESSION, CURL_LOCK_DATA_CONNECT, CURL_LOCK_DATA_DNS].
$sh = curl_share_init_persistent(SHARE_OPTIONS);

for ($i = 0; $i < CALLS; $i++) {
    $ch = curl_init(API_URL);
    curl_setopt($ch, CURLOPT_SHARE, $sh);
    curl_setopt_array($ch, API_OPTIONS);
    curl_exec($ch);
    report($ch);
}
