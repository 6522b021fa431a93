<?php
// The harness's side of a lab script, prepended to it: where the API is,
// how many calls a request makes, and report(), which prints what curl
// measured as one JSON line for the driver. The lab's own code is the
// script after it. Inputs come from $_SERVER, the query (php -S) or the environment.
function connlab_input(string $k, string $def = ''): string
{
    $v = $_SERVER[$k] ?? $_GET[$k] ?? getenv($k);
    return ($v === false || $v === null) ? $def : (string) $v;
}

// An exception the lab's code does not catch ends the request, as it
// would under PHP-FPM; the driver reports its class and message.
set_exception_handler(function (Throwable $e) {
    echo json_encode(['error' => get_class($e) . ': ' . $e->getMessage()]), "\n";
});

define('API_URL', connlab_input('CONNLAB_URL'));
define('CALLS', (int) connlab_input('CONNLAB_CALLS', '1'));
(function () {
    $opts = [CURLOPT_RETURNTRANSFER => true, CURLOPT_CAINFO => connlab_input('CONNLAB_CA')];
    // Only where the resolver cannot ask the harness's DNS server (Debian's
    // PHP outside a private namespace): the name is given its address.
    if (($r = connlab_input('CONNLAB_RESOLVE')) !== '') {
        $opts[CURLOPT_RESOLVE] = [$r];
    }
    // curl's timers, compressed as the run compresses the server's (whole
    // seconds: curl takes no less).
    if (($v = connlab_input('CONNLAB_DNS_CACHE_TIMEOUT')) !== '') {
        $opts[CURLOPT_DNS_CACHE_TIMEOUT] = (int) $v;
    }
    if (($v = connlab_input('CONNLAB_MAXAGE_CONN')) !== '') {
        $opts[CURLOPT_MAXAGE_CONN] = (int) $v;
    }
    define('API_OPTIONS', $opts);
    // This request's share set (JSON): a constant's name ("dns" for
    // CURL_LOCK_DATA_DNS, or any constant: "CURLOPT_URL"), or a PHP string
    // in single quotes ("'connect'"), as the lab's share_sets writes them.
    $set = json_decode(connlab_input('CONNLAB_SHARE_SET', '["DNS","CONNECT","SSL_SESSION"]'), true);
    define('SHARE_OPTIONS', array_map(function ($n) {
        if (!is_string($n)) {
            return $n;
        }
        if (strlen($n) >= 2 && $n[0] === "'" && substr($n, -1) === "'") {
            return substr($n, 1, -1);
        }
        foreach (['CURL_LOCK_DATA_' . strtoupper($n), strtoupper($n)] as $c) {
            if (defined($c)) {
                return constant($c);
            }
        }
        throw new Error("connlab: share_sets element \"$n\" names no PHP constant (write one, or a PHP string in single quotes)");
    }, $set ?? []));
})();

$GLOBALS['connlab_call'] = 0;

// report prints one call's measurements, as curl reports them (times in
// microseconds from the start of the call), and when it ended (hrtime).
function report(CurlHandle $ch): void
{
    $end = hrtime(true);
    $GLOBALS['connlab_call']++;
    echo json_encode([
        'call' => $GLOBALS['connlab_call'],
        'end_ns' => $end,
        'end_wall_us' => (int) (microtime(true) * 1e6),
        'num_connects' => curl_getinfo($ch, CURLINFO_NUM_CONNECTS),
        'namelookup_us' => curl_getinfo($ch, CURLINFO_NAMELOOKUP_TIME_T),
        'connect_us' => curl_getinfo($ch, CURLINFO_CONNECT_TIME_T),
        'appconnect_us' => curl_getinfo($ch, CURLINFO_APPCONNECT_TIME_T),
        'starttransfer_us' => curl_getinfo($ch, CURLINFO_STARTTRANSFER_TIME_T),
        'total_us' => curl_getinfo($ch, CURLINFO_TOTAL_TIME_T),
        'local_port' => curl_getinfo($ch, CURLINFO_LOCAL_PORT),
        'http_code' => curl_getinfo($ch, CURLINFO_RESPONSE_CODE),
        'errno' => curl_errno($ch),
        'error' => curl_error($ch),
    ]), "\n";
}

// check runs one statement of a script that probes PHP's behaviour and
// prints its result, or the exception it threw, with PHP's own message.
function check(string $what, callable $f): void
{
    $notices = [];
    set_error_handler(function ($no, $msg) use (&$notices) {
        $notices[] = $msg;
        return true;
    });
    try {
        $r = $f();
        $out = ['check' => $what, 'result' => is_object($r) ? get_class($r) : $r];
    } catch (Throwable $e) {
        $out = ['check' => $what, 'error' => get_class($e) . ': ' . $e->getMessage()];
    }
    restore_error_handler();
    if ($notices) {
        $out['notices'] = $notices;
    }
    echo json_encode($out), "\n";
}
