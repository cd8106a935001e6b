<?php
// The request's bytes in phpserver's worker mode (docs/adr/0013-php-worker-mode.md): one request read from
// nginx, its multipart body made into $_POST and $_FILES, and php://input. The CLI has no request body, so
// php:// is re-registered with a wrapper that serves php://input from the current request and opens every
// other php:// stream with PHP's own.

declare(strict_types=1);

final class PhpserverRequest
{
    /** Reads one request (HTTP/1.0 from nginx, body with Content-Length); null when the peer sent nothing. */
    public static function read($conn): ?array
    {
        $head = '';
        while (!str_contains($head, "\r\n\r\n")) {
            $chunk = fread($conn, 8192);
            if ($chunk === '' || $chunk === false) return null;
            $head .= $chunk;
            if (strlen($head) > 1 << 20) return null;
        }
        [$head, $body] = explode("\r\n\r\n", $head, 2);
        $lines = explode("\r\n", $head);
        $parts = explode(' ', array_shift($lines), 3);
        if (count($parts) < 2) return null;
        $headers = [];
        foreach ($lines as $l) {
            $p = strpos($l, ':');
            if ($p !== false) $headers[] = [trim(substr($l, 0, $p)), trim(substr($l, $p + 1))];
        }
        $length = 0;
        foreach ($headers as [$n, $v]) if (strcasecmp($n, 'Content-Length') === 0) $length = (int) $v;
        while (strlen($body) < $length) {
            $chunk = fread($conn, min(1 << 20, $length - strlen($body)));
            if ($chunk === '' || $chunk === false) break;
            $body .= $chunk;
        }
        return ['method' => $parts[0], 'uri' => $parts[1], 'headers' => $headers, 'body' => $body];
    }

    public static function multipart(string $body, string $boundary): void
    {
        $fields = [];
        foreach (explode("--$boundary", $body) as $part) {
            if ($part === '' || str_starts_with($part, '--')) continue;
            $part = ltrim($part, "\r\n");
            $split = strpos($part, "\r\n\r\n");
            if ($split === false) continue;
            $head = substr($part, 0, $split);
            $content = substr($part, $split + 4);
            if (str_ends_with($content, "\r\n")) $content = substr($content, 0, -2);
            if (!preg_match('/name="([^"]*)"/i', $head, $nm)) continue;
            $name = $nm[1];
            if (preg_match('/filename="([^"]*)"/i', $head, $fm)) {
                $type = preg_match('/Content-Type:\s*([^\r\n]+)/i', $head, $tm) ? trim($tm[1]) : 'application/octet-stream';
                $tmp = tempnam(sys_get_temp_dir(), 'php');
                file_put_contents($tmp, $content);
                PhpserverRuntime::$uploaded[$tmp] = true;
                $file = ['name' => basename($fm[1]), 'full_path' => $fm[1], 'type' => $type, 'tmp_name' => $tmp, 'error' => $fm[1] === '' ? UPLOAD_ERR_NO_FILE : UPLOAD_ERR_OK, 'size' => strlen($content)];
                self::setFile($name, $file);
            } else {
                $fields[] = urlencode($name) . '=' . urlencode($content);
            }
        }
        $post = [];
        parse_str(str_replace(['%5B', '%5D'], ['[', ']'], implode('&', $fields)), $post);
        $_POST = $post;
    }

    /** $_FILES as PHP shapes it: a[b][] puts each attribute under $_FILES['a'][attr]['b'][]. */
    private static function setFile(string $name, array $file): void
    {
        if (!preg_match('/^([^\[]+)((?:\[[^\]]*\])*)$/', $name, $m)) return;
        preg_match_all('/\[([^\]]*)\]/', $m[2], $km);
        $keys = $km[1];
        if (!$keys) {
            $_FILES[$m[1]] = $file;
            return;
        }
        foreach ($file as $attr => $v) {
            $ref = &$_FILES[$m[1]][$attr];
            foreach ($keys as $k) {
                if ($k === '') {
                    $ref[] = null;
                    $k = array_key_last($ref);
                }
                $ref = &$ref[$k];
            }
            $ref = $v;
            unset($ref);
        }
    }

}


final class PhpserverPhpStream
{
    public $context;
    /** @var resource|null */
    private $fp = null;
    private int $pos = 0;
    private bool $input = false;

    public function stream_open(string $path, string $mode, int $options, ?string &$opened): bool
    {
        if (strcasecmp($path, 'php://input') === 0) {
            $this->input = true;
            return true;
        }
        stream_wrapper_restore('php');
        try {
            $fp = $this->context ? @fopen($path, $mode, false, $this->context) : @fopen($path, $mode);
        } finally {
            stream_wrapper_unregister('php');
            stream_wrapper_register('php', self::class);
        }
        if ($fp === false) return false;
        $this->fp = $fp;
        return true;
    }

    public function stream_read(int $count): string|false
    {
        if (!$this->input) return fread($this->fp, $count);
        $chunk = substr(PhpserverRuntime::$input, $this->pos, $count);
        $this->pos += strlen($chunk);
        return $chunk;
    }

    public function stream_write(string $data): int
    {
        return $this->input ? 0 : (int) fwrite($this->fp, $data);
    }

    public function stream_eof(): bool
    {
        return $this->input ? $this->pos >= strlen(PhpserverRuntime::$input) : feof($this->fp);
    }

    public function stream_tell(): int
    {
        return $this->input ? $this->pos : (int) ftell($this->fp);
    }

    public function stream_seek(int $offset, int $whence): bool
    {
        if (!$this->input) return fseek($this->fp, $offset, $whence) === 0;
        $len = strlen(PhpserverRuntime::$input);
        $to = match ($whence) { SEEK_SET => $offset, SEEK_CUR => $this->pos + $offset, SEEK_END => $len + $offset, default => -1 };
        if ($to < 0) return false;
        $this->pos = $to;
        return true;
    }

    public function stream_flush(): bool
    {
        return $this->input ? true : fflush($this->fp);
    }

    public function stream_stat(): array|false
    {
        return $this->input ? ['size' => strlen(PhpserverRuntime::$input)] : fstat($this->fp);
    }

    public function stream_close(): void
    {
        if ($this->fp) fclose($this->fp);
    }

    public function stream_truncate(int $size): bool
    {
        return $this->input ? false : ftruncate($this->fp, $size);
    }

    public function stream_set_option(int $option, int $arg1, ?int $arg2): bool
    {
        return false;
    }

    public function stream_cast(int $as)
    {
        return $this->input ? false : $this->fp;
    }
}
