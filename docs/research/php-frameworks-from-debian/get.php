<?php
// get.php URL... : GET each URL, print status, time and the first 300 bytes
foreach (array_slice($argv, 1) as $u) {
    $t = microtime(true);
    $ctx = stream_context_create(['http' => ['ignore_errors' => true, 'timeout' => 20]]);
    $b = @file_get_contents($u, false, $ctx);
    $st = $http_response_header[0] ?? 'no answer';
    printf("%s -> %s (%.0f ms, %d bytes)\n%s\n", $u, $st, 1000 * (microtime(true) - $t), strlen((string) $b), substr((string) $b, 0, 300));
}
