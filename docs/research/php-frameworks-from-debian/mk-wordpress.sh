#!/bin/bash
# mk-wordpress.sh DEST : a git-pushable WordPress 6.8 app from Debian trixie's wordpress package
set -euo pipefail
R=/tmp/fw-research; D="$1"; rm -rf "$D"; mkdir -p "$D"
W=$R/root/wp/usr/share/wordpress
# the core, with Debian's relative symlinks (underscore, lodash, cropper, getID3) resolved
(cd $W && tar --exclude=./.htaccess --exclude=./wp-config.php --exclude=./wp-includes/certificates/ca-bundle.crt -chf - .) | tar -xf - -C "$D"
cp /etc/ssl/certs/ca-certificates.crt "$D/wp-includes/certificates/ca-bundle.crt"   # was a link to /etc/ssl/certs
cp $W/../../../var/lib/wordpress/wp-content/index.php "$D/wp-content/index.php" 2>/dev/null || true
mkdir -p "$D/wp-content/uploads"; touch "$D/wp-content/uploads/.gitkeep"
cat > "$D/wp-config.php" <<'EOF'
<?php
// WordPress on Pier: the database is the linked MySQL add-on
$env = static fn (string $k, ?string $d = null): ?string => getenv($k) !== false ? getenv($k) : ($_SERVER[$k] ?? $d);

define('DB_NAME', $env('MYSQL_ADDON_DB', 'wordpress'));
define('DB_USER', $env('MYSQL_ADDON_USER', 'wordpress'));
define('DB_PASSWORD', $env('MYSQL_ADDON_PASSWORD', ''));
define('DB_HOST', $env('MYSQL_ADDON_HOST', '127.0.0.1').':'.$env('MYSQL_ADDON_PORT', '3306'));
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');

// salts: set them as app variables (pier env set WP_AUTH_KEY ...); the fallback derives them from the DB password
foreach (['AUTH_KEY', 'SECURE_AUTH_KEY', 'LOGGED_IN_KEY', 'NONCE_KEY', 'AUTH_SALT', 'SECURE_AUTH_SALT', 'LOGGED_IN_SALT', 'NONCE_SALT'] as $k) {
    define($k, $env('WP_'.$k, hash('sha256', $k.'|'.DB_PASSWORD.'|'.DB_NAME)));
}
$table_prefix = $env('WP_TABLE_PREFIX', 'wp_');

// the edge terminates TLS
if (($_SERVER['HTTP_X_FORWARDED_PROTO'] ?? '') === 'https') {
    $_SERVER['HTTPS'] = 'on';
}
if ($env('WP_HOME')) {
    define('WP_HOME', $env('WP_HOME'));
    define('WP_SITEURL', $env('WP_HOME'));
}
// the release is read-only: no core/plugin/theme installs or updates from the admin; uploads go to
// wp-content/uploads (the fs add-on's mount: CC_FS_BUCKET=/wp-content/uploads:<bucket>)
define('DISALLOW_FILE_MODS', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_AUTO_UPDATE_CORE', false);
define('FS_METHOD', 'direct');
define('WP_DEBUG', (bool) $env('WP_DEBUG', ''));
define('WP_DEBUG_DISPLAY', false);
define('WP_DEBUG_LOG', WP_DEBUG ? 'php://stderr' : false);

if (!defined('ABSPATH')) {
    define('ABSPATH', __DIR__.'/');
}
require_once ABSPATH.'wp-settings.php';
EOF
