<?php
// What a persistent handle is, and what PHP refuses to do with it. Each
// check() prints what one statement returned, or the exception it threw
// with PHP's own message, under an id the lab's real_expect reads.
$a = curl_share_init_persistent([CURL_LOCK_DATA_DNS, CURL_LOCK_DATA_CONNECT, CURL_LOCK_DATA_SSL_SESSION]);
$b = curl_share_init_persistent([CURL_LOCK_DATA_SSL_SESSION, CURL_LOCK_DATA_CONNECT, CURL_LOCK_DATA_DNS]);
check('identical', fn () => var_export($a === $b, true));
check('class', fn () => get_class($a));

// Two objects, one pool: the call on $b finds the connection of the call on $a.
foreach ([$a, $b] as $sh) {
    $ch = curl_init(API_URL);
    curl_setopt($ch, CURLOPT_SHARE, $sh);
    curl_setopt_array($ch, API_OPTIONS);
    curl_exec($ch);
    report($ch);
}

// It cannot be changed or closed.
check('setopt', fn () => curl_share_setopt($a, CURLSHOPT_SHARE, CURL_LOCK_DATA_COOKIE));
check('close', fn () => curl_share_close($a));
check('close_plain', fn () => var_export(curl_share_close(curl_share_init()), true));
