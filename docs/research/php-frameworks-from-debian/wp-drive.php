<?php
// wp-drive.php BASE : run WordPress's installer over HTTP, publish a post and upload a media file via XML-RPC
$base = rtrim($argv[1], '/');
function req(string $method, string $url, string $body = '', string $type = 'application/x-www-form-urlencoded'): array {
    $ctx = stream_context_create(['http' => ['method' => $method, 'ignore_errors' => true, 'follow_location' => 0, 'timeout' => 60,
        'header' => $body !== '' ? "Content-Type: $type\r\n" : '', 'content' => $body]]);
    $t = microtime(true);
    $b = file_get_contents($url, false, $ctx);
    return [$http_response_header[0] ?? 'none', $b, round(1000 * (microtime(true) - $t)), $http_response_header ?? []];
}
function xmlrpc(string $base, string $method, array $params): string {
    $x = '<?xml version="1.0"?><methodCall><methodName>'.$method.'</methodName><params>';
    foreach ($params as $p) $x .= '<param><value>'.$p.'</value></param>';
    [$st, $b] = req('POST', "$base/xmlrpc.php", $x.'</params></methodCall>', 'text/xml');
    return $b;
}
[$st, $b, $ms] = req('GET', "$base/wp-admin/install.php");
echo "GET install.php: $st ($ms ms) ", preg_match('/<title>([^<]*)/', $b, $m) ? $m[1] : '', "\n";
[$st, $b, $ms] = req('POST', "$base/wp-admin/install.php?step=2", http_build_query([
    'weblog_title' => 'Pier WordPress', 'user_name' => 'admin', 'admin_password' => 'pier-Secret-123',
    'admin_password2' => 'pier-Secret-123', 'pw_weak' => '1', 'admin_email' => 'admin@example.com', 'blog_public' => '0', 'language' => '']));
echo "POST install.php?step=2: $st ($ms ms) ", preg_match('/<h1>([^<]*)/', $b, $m) ? $m[1] : substr(strip_tags($b), 0, 200), "\n";
$u = '<string>admin</string>'; $p = '<string>pier-Secret-123</string>';
$r = xmlrpc($base, 'wp.newPost', ['<int>1</int>', $u, $p, '<struct><member><name>post_title</name><value><string>Hello from Pier</string></value></member><member><name>post_content</name><value><string>Published over XML-RPC.</string></value></member><member><name>post_status</name><value><string>publish</string></value></member></struct>']);
preg_match('/<string>(\d+)<\/string>/', $r, $m); $id = $m[1] ?? null;
echo "wp.newPost: id=", $id ?? substr($r, 0, 300), "\n";
$png = base64_encode(file_get_contents(__DIR__.'/pixel.png'));
$r = xmlrpc($base, 'wp.uploadFile', ['<int>1</int>', $u, $p, '<struct><member><name>name</name><value><string>pixel.png</string></value></member><member><name>type</name><value><string>image/png</string></value></member><member><name>bits</name><value><base64>'.$png.'</base64></value></member></struct>']);
preg_match('/<name>url<\/name><value><string>([^<]+)/', $r, $m); $url = $m[1] ?? null;
echo "wp.uploadFile: url=", $url ?? substr($r, 0, 300), "\n";
[$st, $b, $ms] = req('GET', "$base/?p=$id");
echo "GET /?p=$id: $st ($ms ms) title found: ", str_contains($b, 'Hello from Pier') ? 'yes' : 'no', "\n";
[$st, $b, $ms] = req('GET', "$base/");
echo "GET /: $st ($ms ms) ", strlen($b), " bytes\n";
if ($url) { $path = parse_url($url, PHP_URL_PATH); [$st, $b] = req('GET', "$base$path"); echo "GET $path: $st ", strlen($b), " bytes, same as sent: ", $b === base64_decode($png) ? 'yes' : 'no', "\n"; }
