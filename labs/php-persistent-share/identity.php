<?php
// What the option set does to the handle's identity, and what PHP refuses.
$a = curl_share_init_persistent([CURL_LOCK_DATA_DNS, CURL_LOCK_DATA_CONNECT, CURL_LOCK_DATA_SSL_SESSION]);
$b = curl_share_init_persistent([CURL_LOCK_DATA_SSL_SESSION, CURL_LOCK_DATA_CONNECT, CURL_LOCK_DATA_DNS]);
check('same set, other order: $a === $b', fn () => var_export($a === $b, true));
check('class', fn () => get_class($a));

// Two objects, one pool: the second call finds the first call's connection.
foreach ([$a, $b] as $sh) {
    $ch = curl_init(API_URL);
    curl_setopt($ch, CURLOPT_SHARE, $sh);
    curl_setopt_array($ch, API_OPTIONS);
    curl_exec($ch);
    report($ch);
}

check('[DNS, COOKIE]', fn () => curl_share_init_persistent([CURL_LOCK_DATA_DNS, CURL_LOCK_DATA_COOKIE]));
check('[]', fn () => curl_share_init_persistent([]));
check('[DNS, CURLOPT_URL]', fn () => curl_share_init_persistent([CURL_LOCK_DATA_DNS, CURLOPT_URL]));
check("[DNS, 'connect']", fn () => curl_share_init_persistent([CURL_LOCK_DATA_DNS, 'connect']));
check('curl_share_setopt($a, ...)', fn () => curl_share_setopt($a, CURLSHOPT_SHARE, CURL_LOCK_DATA_COOKIE));
check('curl_share_close($a)', fn () => curl_share_close($a));
check('curl_share_close(curl_share_init())', fn () => var_export(curl_share_close(curl_share_init()), true));
