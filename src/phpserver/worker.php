<?php
// phpserver's worker mode (docs/adr/0013-php-worker-mode.md). A master process listens on a unix socket
// that nginx proxies to, forks N long-lived PHP CLI workers sharing it, and restarts them (with backoff).
// Each worker loads the app's worker script once; the script serves requests in a loop through
// frankenphp_handle_request(callable): bool (phpserver_handle_request is an alias). Per request the
// runtime sets $_GET, $_POST, $_COOKIE, $_FILES, $_SERVER, $_REQUEST and php://input, collects header(),
// setcookie(), http_response_code() (worker-functions.php) and the output, and starts every request with no
// session of its own: a session id comes only from that request's cookie.
//
// Usage (by phpserver, with php-fpm's php.ini and conf.d):
//   php -c FPM_INI -d disable_functions=header,... -d opcache.enable_cli=1 worker.php SOCKET SCRIPT NUM MAX_REQUESTS ROOT READY_FILE

declare(strict_types=1);

[, $socketPath, $script, $num, $maxRequests, $docRoot, $readyFile] = $argv + array_fill(0, 7, '');
$num = max(1, (int) $num);
$maxRequests = max(0, (int) $maxRequests);
$readyTimeout = (float) (getenv('PHPSERVER_WORKER_READY_TIMEOUT') ?: 30);
const MAX_IMMEDIATE_FAILURES = 6;

function say(string $msg): void
{
    fwrite(STDERR, "phpserver: $msg\n");
}

if (!is_file($script)) {
    say("worker script $script: no such file");
    exit(2);
}
@unlink($socketPath);
$server = stream_socket_server("unix://$socketPath", $errno, $errstr);
if ($server === false) {
    say("cannot listen on $socketPath: $errstr");
    exit(2);
}
chmod($socketPath, 0666);

// ------------------------------------------------------------------------------------------------
// Master: keeps $num workers running.

/** @var array<int, array{slot: int, pipe: resource, ready: bool, started: float}> */
$children = [];
$failures = 0;
$everReady = false;
$readyWritten = false;
$stopping = false;
$started = microtime(true);
pcntl_async_signals(true);
$stop = function () use (&$stopping, &$children) {
    $stopping = true;
    foreach (array_keys($children) as $pid) posix_kill($pid, SIGTERM);
};
pcntl_signal(SIGTERM, $stop);
pcntl_signal(SIGINT, $stop);
pcntl_signal(SIGQUIT, $stop);

/** Forks a worker for $slot; true in the child, which then runs the script at global scope (below). */
$spawn = function (int $slot) use (&$children, &$childPipe) {
    [$parentEnd, $childEnd] = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
    $pid = pcntl_fork();
    if ($pid === -1) {
        say('fork failed');
        return false;
    }
    if ($pid === 0) {
        fclose($parentEnd);
        foreach ($children as $c) fclose($c['pipe']);
        pcntl_signal(SIGTERM, SIG_DFL);
        pcntl_signal(SIGINT, SIG_DFL);
        pcntl_signal(SIGQUIT, SIG_DFL);
        pcntl_async_signals(false);
        $childPipe = $childEnd;
        return true;
    }
    fclose($childEnd);
    stream_set_blocking($parentEnd, false);
    $children[$pid] = ['slot' => $slot, 'pipe' => $parentEnd, 'ready' => false, 'started' => microtime(true)];
    return false;
};

$childPipe = null;
$isChild = false;
for ($i = 0; $i < $num && !$isChild; $i++) $isChild = $spawn($i);
$restartAt = [];
while (!$isChild) {
    // Workers say "ready" when they first call the handler.
    $pipes = array_map(fn($c) => $c['pipe'], array_filter($children, fn($c) => !$c['ready']));
    if ($pipes) {
        $r = array_values($pipes);
        $w = $e = null;
        @stream_select($r, $w, $e, 0, 100000);
        foreach ($children as $pid => $c) {
            if (!$c['ready'] && in_array($c['pipe'], $r, true) && fread($c['pipe'], 16) !== '') {
                $children[$pid]['ready'] = true;
                $everReady = true;
                $failures = 0;
            }
        }
    } else {
        usleep(100000);
    }
    if (!$readyWritten && $everReady && count(array_filter($children, fn($c) => $c['ready'])) === $num) {
        file_put_contents($readyFile, (string) getmypid());
        $readyWritten = true;
        say("$num worker(s) of $script ready" . ($maxRequests > 0 ? " (each restarts after $maxRequests requests)" : ''));
    }
    while (($pid = pcntl_waitpid(-1, $status, WNOHANG)) > 0) {
        $c = $children[$pid] ?? null;
        unset($children[$pid]);
        if ($c === null || $stopping) continue;
        fclose($c['pipe']);
        $code = pcntl_wifexited($status) ? pcntl_wexitstatus($status) : 128 + pcntl_wtermsig($status);
        if (!$c['ready']) {
            $failures++;
            say("worker " . $c['slot'] . " exited with code $code before it handled a request ($script never reached frankenphp_handle_request)");
            if ($failures >= MAX_IMMEDIATE_FAILURES) {
                say("the worker script $script exited $failures times in a row without handling a request: giving up");
                $stop();
                while (pcntl_waitpid(-1, $s) > 0);
                exit(1);
            }
            $restartAt[$c['slot']] = microtime(true) + min(5.0, 0.1 * 2 ** ($failures - 1));
        } else {
            if ($code !== 0) say("worker " . $c['slot'] . " exited with code $code: restarting it");
            $restartAt[$c['slot']] = microtime(true);
        }
    }
    if ($stopping) {
        if (!$children) exit(0);
        continue;
    }
    foreach ($restartAt as $slot => $at) {
        if (microtime(true) >= $at) {
            unset($restartAt[$slot]);
            if ($isChild = $spawn($slot)) break 2;
        }
    }
    $late = array_filter($children, fn($c) => !$c['ready'] && microtime(true) - $c['started'] > $readyTimeout);
    if ($late) {
        say("the worker script $script did not call frankenphp_handle_request() within {$readyTimeout} s: giving up");
        $stop();
        while (pcntl_waitpid(-1, $s) > 0);
        exit(1);
    }
}

// A worker: the runtime, then the app's script at global scope, as a web request would run it.
require __DIR__ . '/worker-runtime.php';
phpserver_worker_setup($server, $childPipe, $script, $maxRequests, $docRoot);
$__phpserver_script = $script;
unset($argv, $argc, $socketPath, $script, $num, $maxRequests, $docRoot, $readyFile, $readyTimeout, $server, $children,
    $failures, $everReady, $readyWritten, $stopping, $started, $stop, $spawn, $childPipe, $isChild, $restartAt, $i, $errno, $errstr);
require $__phpserver_script;
exit(0);
