<?php
// One curl handle for every call of the request: a handle keeps its own
// connections until it is destroyed.
$ch = curl_init(API_URL);
curl_setopt_array($ch, API_OPTIONS);

for ($i = 0; $i < CALLS; $i++) {
    curl_exec($ch);
    report($ch);
}
