<?php
// phpserver run --config FILE: reads the Caddyfile subset that phpserver serves (docs/guide.md, "The PHP
// runtime") and prints the settings as shell assignments for the phpserver script. Anything outside the
// subset is refused with its line number, never ignored in silence.
//
// The subset: one optional global options block ({ debug | admin ... | auto_https ... | frankenphp {} }),
// then one site block `ADDRESS {` whose address is `:PORT`, `HOST:PORT` or `http://HOST:PORT`, holding
// root [*] DIR | encode [FORMATS] | php_server [{ root DIR | worker FILE [N] }] | php | file_server | log |
// header NAME VALUE. `frankenphp { worker FILE [N] }` in the global options enables worker mode too.
// `{$VAR}` and `{$VAR:default}` are replaced by the environment's values, as that server does.

$file = $argv[1] ?? '';
$text = @file_get_contents($file);
if ($text === false) fail(0, "cannot read the file");

function fail(int $line, string $msg): never
{
    global $file;
    fwrite(STDERR, "phpserver: $file" . ($line > 0 ? ":$line" : '') . ": $msg\n");
    exit(2);
}

/** Tokens per line: words, "quoted strings", `{` and `}`; comments dropped. */
function tokenize(string $text): array
{
    $lines = [];
    foreach (preg_split('/\r?\n/', $text) as $i => $raw) {
        $raw = preg_replace_callback('/\{\$([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}/', function ($m) {
            $v = getenv($m[1]);
            return ($v === false || $v === '') ? ($m[2] ?? '') : $v;
        }, $raw);
        $tokens = [];
        $n = strlen($raw);
        for ($p = 0; $p < $n;) {
            $c = $raw[$p];
            if ($c === ' ' || $c === "\t") { $p++; continue; }
            if ($c === '#') break;
            if ($c === '"') {
                $end = $p + 1;
                $s = '';
                while ($end < $n && $raw[$end] !== '"') {
                    if ($raw[$end] === '\\' && $end + 1 < $n) $end++;
                    $s .= $raw[$end++];
                }
                if ($end >= $n) fail($i + 1, 'unterminated quoted string');
                $tokens[] = ['v' => $s, 'q' => true];
                $p = $end + 1;
                continue;
            }
            $end = $p;
            while ($end < $n && !in_array($raw[$end], [' ', "\t"], true)) $end++;
            $tokens[] = ['v' => substr($raw, $p, $end - $p), 'q' => false];
            $p = $end;
        }
        if ($tokens) $lines[] = ['n' => $i + 1, 't' => $tokens];
    }
    return $lines;
}

$settings = ['listen' => '', 'root' => null, 'debug' => 0, 'compress' => 0, 'access_log' => 0, 'worker' => null, 'worker_num' => ''];

/** `worker FILE [N]`: worker mode (the block form `worker { file ... }` is not supported). */
function setWorker(array $line, array $w): void
{
    global $settings;
    if (end($w) === '{') fail($line['n'], 'worker: write it on one line, worker FILE [N] (the block form is not supported)');
    if (count($w) < 2 || count($w) > 3 || (isset($w[2]) && !preg_match('/^\d{1,3}$/', $w[2])))
        fail($line['n'], 'worker takes a script and optionally a number of workers: worker index.php 4');
    $settings['worker'] = $w[1];
    $settings['worker_num'] = $w[2] ?? '';
}
$headers = [];
$lines = tokenize($text);
$i = 0;
$count = count($lines);
$words = fn(array $l) => array_map(fn($t) => $t['v'], $l['t']);
$isOpen = fn(array $l) => !end($l['t'])['q'] && end($l['t'])['v'] === '{';
$isClose = fn(array $l) => count($l['t']) === 1 && $l['t'][0]['v'] === '}' && !$l['t'][0]['q'];

/** Skips a nested block whose opening line is $i; returns the index after its closing line. */
$skipBlock = function (int $i, callable $inner) use (&$lines, $count, $isOpen, $isClose): int {
    $open = $lines[$i]['n'];
    for ($j = $i + 1; $j < $count; $j++) {
        if ($isClose($lines[$j])) return $j + 1;
        $inner($lines[$j]);
        if ($isOpen($lines[$j])) fail($lines[$j]['n'], 'nested blocks are not supported here');
    }
    fail($open, 'this block is never closed with }');
};

// Global options block.
if ($i < $count && $words($lines[$i]) === ['{']) {
    $open = $lines[$i]['n'];
    for ($i++; $i < $count && !$isClose($lines[$i]); $i++) {
        $w = $words($lines[$i]);
        $n = $lines[$i]['n'];
        switch ($w[0]) {
            case 'debug':
                $settings['debug'] = 1;
                break;
            case 'admin':
            case 'auto_https':
            case 'order':
            case 'http_port':
                // Pier's edge does TLS and ports; the admin API is not served. Harmless: accepted.
                if ($isOpen($lines[$i])) $i = $skipBlock($i, fn() => null) - 1;
                break;
            case 'frankenphp':
                if ($isOpen($lines[$i])) {
                    $i = $skipBlock($i, function ($l) use ($words) {
                        $k = $words($l)[0];
                        if ($k === 'worker') { setWorker($l, $words($l)); return; }
                        if (!in_array($k, ['num_threads', 'max_threads', 'php_ini'], true))
                            fail($l['n'], "frankenphp option '$k' is not supported (supported: worker, num_threads, max_threads)");
                    }) - 1;
                }
                break;
            default:
                fail($n, "global option '{$w[0]}' is not supported (supported: debug, admin, auto_https, order, frankenphp)");
        }
    }
    if ($i >= $count) fail($open, 'the global options block is never closed with }');
    $i++;
}

if ($i >= $count) fail(0, 'no site block: write one such as `:8080 {` ... `}`');
// Site block.
$site = $lines[$i];
$w = $words($site);
if (!$isOpen($site) || count($w) !== 2)
    fail($site['n'], 'expected one site address followed by { (for example `:8080 {`)');
$addr = preg_replace('#^http://#', '', rtrim($w[0], ','));
if (str_starts_with($w[0], 'https://'))
    fail($site['n'], "https:// addresses are not served: Pier's edge does TLS; use :8080");
if (!preg_match('/^([A-Za-z0-9.\-\[\]]*):(\d{1,5})$/', $addr, $m))
    fail($site['n'], "site address '{$w[0]}' needs a port (for example :8080 or 0.0.0.0:8080)");
$host = ($m[1] === '' || $m[1] === 'localhost' || !preg_match('/^[0-9.]+$/', $m[1])) ? '0.0.0.0' : $m[1];
$settings['listen'] = "$host:{$m[2]}";
$php = false;
for ($i++; $i < $count && !$isClose($lines[$i]); $i++) {
    $l = $lines[$i];
    $w = $words($l);
    $n = $l['n'];
    switch ($w[0]) {
        case 'root':
            $args = array_slice($w, 1);
            if (($args[0] ?? '') === '*') array_shift($args);
            if (count($args) !== 1) fail($n, 'root takes one folder: root * public');
            $settings['root'] = $args[0];
            break;
        case 'encode':
            foreach (array_slice($w, 1) as $f)
                if (!in_array($f, ['gzip', 'zstd', 'br'], true)) fail($n, "encode: unknown format '$f' (gzip, zstd, br)");
            if ($isOpen($l)) fail($n, 'encode: options blocks are not supported');
            $settings['compress'] = 1;
            break;
        case 'php_server':
        case 'php':
            $php = true;
            if ($isOpen($l)) {
                $i = $skipBlock($i, function ($inner) use ($words, &$settings) {
                    $iw = $words($inner);
                    if ($iw[0] === 'root' && count($iw) === 2) { $settings['root'] = $iw[1]; return; }
                    if ($iw[0] === 'worker') { setWorker($inner, $iw); return; }
                    fail($inner['n'], "php_server option '{$iw[0]}' is not supported (supported: root DIR, worker FILE [N])");
                }) - 1;
            } elseif (count($w) > 1) {
                fail($n, "{$w[0]} takes no arguments here (a matcher is not supported)");
            }
            break;
        case 'file_server':
            if (count($w) > 1) fail($n, 'file_server takes no arguments here');
            break;
        case 'log':
            if ($isOpen($l)) fail($n, 'log: options blocks are not supported (the access log goes to the instance logs)');
            $settings['access_log'] = 1;
            break;
        case 'header':
            if (count($w) !== 3 || !preg_match('/^[A-Za-z0-9-]+$/', $w[1]))
                fail($n, 'header takes a name and one value: header X-Frame-Options "DENY"');
            $headers[] = $w[1] . ' ' . '"' . addcslashes($w[2], '"\\$') . '"';
            break;
        default:
            fail($n, "directive '{$w[0]}' is not supported (supported: root, encode, php_server, php, file_server, log, header)");
    }
}
if ($i >= $count) fail($site['n'], 'the site block is never closed with }');
for ($i++; $i < $count; $i++) fail($lines[$i]['n'], 'only one site block is supported');
if (!$php) fail($site['n'], 'the site block has no php_server (or php) directive');

$q = fn($s) => "'" . str_replace("'", "'\\''", (string) $s) . "'";
echo 'listen=' . $q($settings['listen']) . "\n";
if ($settings['root'] !== null) echo 'root=' . $q($settings['root']) . "\n";
if ($settings['worker'] !== null) echo 'worker=' . $q($settings['worker']) . "\nworker_num=" . $q($settings['worker_num']) . "\n";
foreach (['debug', 'compress', 'access_log'] as $k) echo "$k=" . $settings[$k] . "\n";
foreach ($headers as $h) echo 'extra_headers+=(' . $q($h) . ")\n";
