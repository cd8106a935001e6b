<?php // seq.php URL N : N sequential GETs, prints requests/s
[$_, $u, $n] = $argv; file_get_contents($u); $t = microtime(true);
for ($i = 0; $i < $n; $i++) file_get_contents($u);
printf("%s: %d requests, %.0f req/s (sequential, one client)\n", $u, $n, $n / (microtime(true) - $t));
