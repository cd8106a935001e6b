// WordPress as a user deploys it on Pier (issue 17, item 5), for test/e2e/wordpress.test.ts: the core of
// Debian trixie's `wordpress` package (6.8) copied into a git work tree with Debian's symlinks resolved, a
// wp-config.php of the user's own that reads the MySQL add-on's variables and the salts from the app's
// variables, and a client for what a user does in a browser or a blogging app: the installer's form, a
// post and a media upload over XML-RPC.
import { randomBytes } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { crc32, deflateSync } from "node:zlib";
import { debianPackages } from "../support/debian-packages.js";
import { type HttpResult, httpRequest, ROOT } from "./harness.js";

/** The packages whose files the core is made of: the symlinks of `wordpress` point into the other ones. */
const WORDPRESS_PACKAGES = [
  "wordpress",
  "wordpress-theme-twentytwentyfive",
  "php-getid3",
  "libjs-cropper",
  "libjs-lodash",
  "libjs-underscore",
];

/** Debian trixie's WordPress, downloaded once into the tests' cache and extracted: the root of its files. */
export function wordpressRoot(): Promise<string> {
  return debianPackages("wordpress", WORDPRESS_PACKAGES, { closure: false });
}

/** Debian's files that the app replaces or does without: its host-picking wp-config.php and Apache's file. */
const LEFT_OUT = new Set(["wp-config.php", ".htaccess"]);

/** Where Debian's link to the system's CA bundle leads, and where the host has one to copy. */
const CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";

/** The eight keys and salts of wp-config.php, each read from `WP_<name>`. */
const SALT_NAMES = [
  "AUTH_KEY",
  "SECURE_AUTH_KEY",
  "LOGGED_IN_KEY",
  "NONCE_KEY",
  "AUTH_SALT",
  "SECURE_AUTH_SALT",
  "LOGGED_IN_SALT",
  "NONCE_SALT",
];

/**
 * The wp-config.php the guide's WordPress section shows (docs/guide.md, its first php block): the test runs
 * the very file a user copies from there. It reads the database from the MySQL add-on's variables and the
 * eight keys and salts from `WP_<name>` variables (SALT_NAMES).
 */
export function guideWpConfig(): string {
  const guide = readFileSync(join(ROOT, "docs/guide.md"), "utf8");
  const section = guide.slice(guide.indexOf("\n## WordPress\n"));
  const block = /```php\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error("docs/guide.md: no php block in its WordPress section");
  return block;
}

/** Where a symlink of the extracted packages leads, inside `root` (Debian's links are relative or absolute). */
function linkTarget(root: string, link: string): string {
  const target = readlinkSync(link);
  return isAbsolute(target) ? join(root, target) : resolve(dirname(link), target);
}

/** Copies one entry of the core, a symlink as the file it leads to. */
function copyEntry(root: string, from: string, to: string): void {
  const stat = lstatSync(from);
  if (stat.isDirectory()) copyTree(root, from, to);
  else if (!stat.isSymbolicLink()) copyFileSync(from, to);
  else copyFileSync(linkedFile(root, from), to);
}

/** The file a symlink of the packages leads to; Debian's link to the system's CA bundle, the host's bundle. */
function linkedFile(root: string, link: string): string {
  const target = linkTarget(root, link);
  if (existsSync(target) && statSync(target).isFile()) return target;
  if (readlinkSync(link) === CA_BUNDLE) return CA_BUNDLE;
  throw new Error(`${relative(root, link)} leads to ${readlinkSync(link)}, which no package of the set has`);
}

function copyTree(root: string, from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const name of readdirSync(from)) copyEntry(root, join(from, name), join(to, name));
}

/**
 * Writes WordPress into the work tree `dest` from `root` (wordpressRoot()): Debian's core
 * (`usr/share/wordpress`) with its symlinks resolved, and the guide's wp-config.php. No wp-content/uploads:
 * the fs add-on's mount makes it.
 */
export function writeWordPressApp(root: string, dest: string): void {
  const core = join(root, "usr/share/wordpress");
  for (const name of readdirSync(core)) {
    if (!LEFT_OUT.has(name)) copyEntry(root, join(core, name), join(dest, name));
  }
  writeFileSync(join(dest, "wp-config.php"), guideWpConfig());
}

/** `WP_<salt>=<random>` lines for `pier env import`, as a user makes them once per site. */
export function saltVariables(): string {
  return SALT_NAMES.map((name) => `WP_${name}=${randomBytes(48).toString("base64url")}\n`).join("");
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typed = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typed));
  return Buffer.concat([length, typed, crc]);
}

/** A 16x16 RGB PNG of random pixels: an image WordPress accepts, whose bytes no other file has. */
export function randomPng(): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(16, 0);
  header.writeUInt32BE(16, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8 bits, RGB, deflate, no filter method, no interlace
  const rows = Array.from({ length: 16 }, () => Buffer.concat([Buffer.from([0]), randomBytes(48)]));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", header),
    pngChunk("IDAT", deflateSync(Buffer.concat(rows))),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

const escapeXml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** One XML-RPC value: a string, an int, bytes (base64) or a struct of those. */
type XmlRpcValue = string | number | Buffer | { [name: string]: XmlRpcValue };

function xmlValue(v: XmlRpcValue): string {
  if (typeof v === "string") return `<string>${escapeXml(v)}</string>`;
  if (typeof v === "number") return `<int>${v}</int>`;
  if (Buffer.isBuffer(v)) return `<base64>${v.toString("base64")}</base64>`;
  const members = Object.entries(v).map(
    ([name, value]) => `<member><name>${name}</name><value>${xmlValue(value)}</value></member>`,
  );
  return `<struct>${members.join("")}</struct>`;
}

/** A WordPress site reached through Pier's edge at `port` by its host name (no port in its URL). */
export class WordPressSite {
  constructor(
    readonly port: number,
    readonly host: string,
  ) {}

  get(path: string): Promise<HttpResult> {
    return httpRequest(this.port, this.host, "GET", path, {}, "", 60_000);
  }

  /** The path of one of the site's own URLs (`http://<host>/...`), to request it through the edge. */
  pathOf(url: string): string {
    const u = new URL(url);
    if (u.host !== this.host) throw new Error(`${url} is not a URL of ${this.host}`);
    return `${u.pathname}${u.search}`;
  }

  /** The installer's second step, as its form posts it: the site's title and its administrator. */
  install(title: string, user: string, password: string): Promise<HttpResult> {
    const form = new URLSearchParams({
      weblog_title: title,
      user_name: user,
      admin_password: password,
      admin_password2: password,
      pw_weak: "1",
      admin_email: `${user}@example.com`,
      blog_public: "0",
      language: "",
    });
    const headers = { "content-type": "application/x-www-form-urlencoded" };
    return httpRequest(
      this.port,
      this.host,
      "POST",
      "/wp-admin/install.php?step=2",
      headers,
      form.toString(),
      60_000,
    );
  }

  /** One XML-RPC call to /xmlrpc.php; answers the response's body, or throws with its fault. */
  async xmlrpc(method: string, params: XmlRpcValue[]): Promise<string> {
    const call = `<?xml version="1.0"?><methodCall><methodName>${method}</methodName><params>${params
      .map((p) => `<param><value>${xmlValue(p)}</value></param>`)
      .join("")}</params></methodCall>`;
    const r = await httpRequest(
      this.port,
      this.host,
      "POST",
      "/xmlrpc.php",
      { "content-type": "text/xml" },
      call,
      60_000,
    );
    if (r.status !== 200 || r.body.includes("<fault>")) {
      throw new Error(`${method} answered ${r.status}: ${r.body.slice(0, 500)}`);
    }
    return r.body;
  }

  /** `wp.newPost`, published: answers the post's id. */
  async publish(user: string, password: string, title: string, content: string): Promise<string> {
    const post = { post_title: title, post_content: content, post_status: "publish" };
    const body = await this.xmlrpc("wp.newPost", [1, user, password, post]);
    const id = /<string>(\d+)<\/string>/.exec(body)?.[1];
    if (!id) throw new Error(`wp.newPost answered no post id: ${body.slice(0, 500)}`);
    return id;
  }

  /** `wp.uploadFile` (the media library): answers the file's URL. */
  async upload(user: string, password: string, name: string, type: string, bits: Buffer): Promise<string> {
    const body = await this.xmlrpc("wp.uploadFile", [1, user, password, { name, type, bits }]);
    const url = /<name>url<\/name><value><string>([^<]+)<\/string>/.exec(body)?.[1];
    if (!url) throw new Error(`wp.uploadFile answered no URL: ${body.slice(0, 500)}`);
    return url;
  }
}
