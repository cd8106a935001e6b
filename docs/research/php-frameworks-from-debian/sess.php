<?php
// sess.php URL : 3 GETs: no cookie, with the first answer's cookies, no cookie again
function get($u, $cookie = '') {
    $ctx = stream_context_create(['http' => ['ignore_errors' => true, 'header' => $cookie ? "Cookie: $cookie\r\n" : '']]);
    $b = file_get_contents($u, false, $ctx);
    $c = [];
    foreach ($http_response_header as $h) if (preg_match('/^Set-Cookie: ([^;]+)/i', $h, $m)) $c[] = $m[1];
    echo $http_response_header[0], ' ', substr($b, 0, 200), "\n";
    return implode('; ', $c);
}
$c = get($argv[1]); get($argv[1], $c); get($argv[1]); get($argv[1], $c);
