<?php
// The persistent handle where PHP has it (8.5 and later); before, each
// handle connects on its own, and the request reconnects as it always did.
$sh = function_exists('curl_share_init_persistent')
    ? curl_share_init_persistent([CURL_LOCK_DATA_DNS, CURL_LOCK_DATA_CONNECT, CURL_LOCK_DATA_SSL_SESSION])
    : null;

for ($i = 0; $i < CALLS; $i++) {
    $ch = curl_init(API_URL);
    if ($sh) {
        curl_setopt($ch, CURLOPT_SHARE, $sh);
    }
    curl_setopt_array($ch, API_OPTIONS);
    curl_exec($ch);
    report($ch);
}
