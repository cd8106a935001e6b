// Whole outputs of the planners and of the edge config renderer, recorded from the code before issue 16
// split them into steps (ADR 0029): planners-golden.test.ts checks that they stay byte-identical.
export interface GoldenCase {
  fn: "planNodeBuild" | "planPhpBuild" | "planDockerBuild" | "dockerSettings" | "renderHaproxyConfig";
  args: unknown[];
  out: unknown;
}

export const GOLDEN: GoldenCase[] = [
  {
    fn: "planNodeBuild",
    args: [
      {
        vars: { NODE_ENV: "production", NPM_TOKEN: "npm_s3cr3tT0k3nValue", CC_NODE_BUILD_TOOL: "yarn2" },
        files: {
          packageJson: '{"name":"app","version":"1.0.0","scripts":{"start":"node server.js"}}',
          gitignore: "/node_modules\n",
          lockFiles: {
            packageLock: false,
            npmShrinkwrap: false,
            yarnLock: false,
            bunLock: false,
            pnpmLock: false,
          },
          yarnrcYml: false,
        },
        versions: [
          { version: "24.2.0", major: 24, lts: null, eol: false },
          { version: "23.11.1", major: 23, lts: null, eol: true },
          { version: "22.16.0", major: 22, lts: "Jod", eol: false },
          { version: "22.15.1", major: 22, lts: "Jod", eol: false },
          { version: "20.19.2", major: 20, lts: "Iron", eol: false },
          { version: "18.20.8", major: 18, lts: "Hydrogen", eol: true },
          { version: "16.20.2", major: 16, lts: "Gallium", eol: true },
          { version: "16.8.0", major: 16, lts: "Gallium", eol: true },
          { version: "14.21.3", major: 14, lts: "Fermium", eol: true },
          { version: "14.17.0", major: 14, lts: "Fermium", eol: true },
        ],
        npmVersions: ["6.14.18", "8.19.4", "10.9.2", "11.4.2"],
        npmEngines: {
          "8.19.4": "^12.13.0 || ^14.15.0 || >=16.0.0",
          "10.9.2": "^18.17.0 || >=20.5.0",
          "11.4.2": "^20.17.0 || >=22.9.0",
        },
      },
    ],
    out: {
      ok: true,
      plan: {
        nodeVersion: "22.16.0",
        npmVersion: "10.9.2",
        tool: "yarn2",
        devDependencies: false,
        buildSteps: [
          {
            label: "Enabling Yarn (latest stable) through Corepack",
            command:
              "{ command -v corepack >/dev/null 2>&1 || npm install --global corepack@0; } && corepack enable && corepack prepare yarn@stable --activate",
          },
          {
            label: "Installing dependencies: yarn workspaces focus --all --production",
            command: "yarn workspaces focus --all --production",
            install: true,
          },
        ],
        buildEnv: {
          NODE_ENV: "production",
          NPM_TOKEN: "npm_s3cr3tT0k3nValue",
          CC_NODE_BUILD_TOOL: "yarn2",
          INSTANCE_TYPE: "build",
          YARN_NPM_AUTH_TOKEN: "npm_s3cr3tT0k3nValue",
        },
        start: ["yarn", "run", "start"],
        runEnv: {},
        workers: [],
        task: false,
        npmrc: "//registry.npmjs.org/:_authToken=npm_s3cr3tT0k3nValue\n",
        warnings: [],
        logLines: [
          "Node.js version: neither engines.node in package.json nor CC_NODE_VERSION is set, so the newest LTS (Jod): 22.16.0.",
          "npm 10.9.2: the newest npm 10.x (the line of Node.js 22) that accepts Node.js 22.16.0.",
          "Build tool: Yarn Berry (v2 or later) (CC_NODE_BUILD_TOOL=yarn2).",
          "Development dependencies: not installed (NODE_ENV=production and CC_NODE_DEV_DEPENDENCIES unset: the package manager's default).",
          "Step 1/2: Enabling Yarn (latest stable) through Corepack",
          "Step 2/2: Installing dependencies: yarn workspaces focus --all --production",
          "Writing .npmrc with the NPM_TOKEN of registry.npmjs.org.",
          "Yarn 2+ does not read .npmrc: NPM_TOKEN is passed as YARN_NPM_AUTH_TOKEN.",
          "Tip: with Yarn 3 or 4, set YARN_GLOBAL_FOLDER=$APP_HOME/.yarncache/ so that restarts use the build cache.",
          "Start command: yarn run start",
          "The application must listen on 0.0.0.0:8080 (PORT=8080).",
        ],
      },
    },
  },
  {
    fn: "planNodeBuild",
    args: [
      {
        vars: { NODE_ENV: "production", CC_NODE_VERSION: "14.17.0" },
        files: {
          packageJson:
            '{"name":"app","version":"1.0.0","scripts":{"start":"node server.js"},"packageManager":"pnpm@6.0.0"}',
          gitignore: "/node_modules\n",
          lockFiles: {
            packageLock: false,
            npmShrinkwrap: false,
            yarnLock: false,
            bunLock: false,
            pnpmLock: false,
          },
          yarnrcYml: false,
        },
        versions: [
          { version: "24.2.0", major: 24, lts: null, eol: false },
          { version: "23.11.1", major: 23, lts: null, eol: true },
          { version: "22.16.0", major: 22, lts: "Jod", eol: false },
          { version: "22.15.1", major: 22, lts: "Jod", eol: false },
          { version: "20.19.2", major: 20, lts: "Iron", eol: false },
          { version: "18.20.8", major: 18, lts: "Hydrogen", eol: true },
          { version: "16.20.2", major: 16, lts: "Gallium", eol: true },
          { version: "16.8.0", major: 16, lts: "Gallium", eol: true },
          { version: "14.21.3", major: 14, lts: "Fermium", eol: true },
          { version: "14.17.0", major: 14, lts: "Fermium", eol: true },
        ],
        npmVersions: ["6.14.18", "8.19.4", "10.9.2", "11.4.2"],
        npmEngines: {
          "8.19.4": "^12.13.0 || ^14.15.0 || >=16.0.0",
          "10.9.2": "^18.17.0 || >=20.5.0",
          "11.4.2": "^20.17.0 || >=22.9.0",
        },
      },
    ],
    out: {
      ok: true,
      plan: {
        nodeVersion: "14.17.0",
        npmVersion: "6.14.18",
        tool: "npm-install",
        devDependencies: false,
        buildSteps: [
          {
            label: "Installing dependencies: npm install --production",
            command: "npm install --production",
            install: true,
          },
        ],
        buildEnv: {
          NODE_ENV: "production",
          CC_NODE_VERSION: "14.17.0",
          INSTANCE_TYPE: "build",
          npm_config_production: "true",
        },
        start: ["node", "server.js"],
        runEnv: {
          npm_lifecycle_event: "start",
          npm_lifecycle_script: "node server.js",
          npm_package_name: "app",
          npm_package_version: "1.0.0",
          npm_package_json: "/app/package.json",
        },
        workers: [],
        task: false,
        npmrc: null,
        warnings: [
          "Node.js 14.17.0 is end-of-life (no more security fixes): choose a supported version with engines.node or CC_NODE_VERSION.",
          "package.json's packageManager is pnpm@6.0.0 but dependencies are installed with npm: CC_NODE_BUILD_TOOL must be set for pnpm (custom, with CC_CUSTOM_BUILD_TOOL).",
          "packageManager pnpm@6.0.0 is not applied: Corepack comes with Node.js ^14.19.0 || >=16.9.0, and this build uses 14.17.0.",
        ],
        logLines: [
          "Node.js version: CC_NODE_VERSION=14.17.0: 14.17.0.",
          "npm 6.14.18: the newest npm 6.x (the line of Node.js 14) that accepts Node.js 14.17.0.",
          "Build tool: npm install (the default (no bun.lock, bun.lockb or yarn.lock)).",
          "Development dependencies: not installed (NODE_ENV=production and CC_NODE_DEV_DEPENDENCIES unset: the package manager's default).",
          "Step 1/1: Installing dependencies: npm install --production",
          "Start command: node server.js (scripts.start, run directly: a plain node command with no prestart or poststart needs no npm beside it).",
          "The application must listen on 0.0.0.0:8080 (PORT=8080).",
        ],
      },
    },
  },
  {
    fn: "planNodeBuild",
    args: [
      {
        vars: { NODE_ENV: "production" },
        files: {
          packageJson:
            '{"name":"app","version":"1.0.0","scripts":{"start":"node server.js"},"packageManager":"pnpm@9.1.0"}',
          gitignore: "/node_modules\n",
          lockFiles: {
            packageLock: false,
            npmShrinkwrap: false,
            yarnLock: false,
            bunLock: false,
            pnpmLock: false,
          },
          yarnrcYml: false,
        },
        versions: [
          { version: "24.2.0", major: 24, lts: null, eol: false },
          { version: "23.11.1", major: 23, lts: null, eol: true },
          { version: "22.16.0", major: 22, lts: "Jod", eol: false },
          { version: "22.15.1", major: 22, lts: "Jod", eol: false },
          { version: "20.19.2", major: 20, lts: "Iron", eol: false },
          { version: "18.20.8", major: 18, lts: "Hydrogen", eol: true },
          { version: "16.20.2", major: 16, lts: "Gallium", eol: true },
          { version: "16.8.0", major: 16, lts: "Gallium", eol: true },
          { version: "14.21.3", major: 14, lts: "Fermium", eol: true },
          { version: "14.17.0", major: 14, lts: "Fermium", eol: true },
        ],
        npmVersions: ["6.14.18", "8.19.4", "10.9.2", "11.4.2"],
        npmEngines: {
          "8.19.4": "^12.13.0 || ^14.15.0 || >=16.0.0",
          "10.9.2": "^18.17.0 || >=20.5.0",
          "11.4.2": "^20.17.0 || >=22.9.0",
        },
      },
    ],
    out: {
      ok: true,
      plan: {
        nodeVersion: "22.16.0",
        npmVersion: "10.9.2",
        tool: "npm-install",
        devDependencies: false,
        buildSteps: [
          {
            label: "Enabling Corepack (packageManager pnpm@9.1.0)",
            command:
              "{ command -v corepack >/dev/null 2>&1 || npm install --global corepack@0; } && corepack enable",
          },
          {
            label: "Installing dependencies: npm install --omit=dev",
            command: "npm install --omit=dev",
            install: true,
          },
        ],
        buildEnv: { NODE_ENV: "production", INSTANCE_TYPE: "build", npm_config_omit: "dev" },
        start: ["node", "server.js"],
        runEnv: {
          npm_lifecycle_event: "start",
          npm_lifecycle_script: "node server.js",
          npm_package_name: "app",
          npm_package_version: "1.0.0",
          npm_package_json: "/app/package.json",
        },
        workers: [],
        task: false,
        npmrc: null,
        warnings: [
          "package.json's packageManager is pnpm@9.1.0 but dependencies are installed with npm: CC_NODE_BUILD_TOOL must be set for pnpm (custom, with CC_CUSTOM_BUILD_TOOL).",
        ],
        logLines: [
          "Node.js version: neither engines.node in package.json nor CC_NODE_VERSION is set, so the newest LTS (Jod): 22.16.0.",
          "npm 10.9.2: the newest npm 10.x (the line of Node.js 22) that accepts Node.js 22.16.0.",
          "Build tool: npm install (the default (no bun.lock, bun.lockb or yarn.lock)).",
          "Development dependencies: not installed (NODE_ENV=production and CC_NODE_DEV_DEPENDENCIES unset: the package manager's default).",
          "Step 1/2: Enabling Corepack (packageManager pnpm@9.1.0)",
          "Step 2/2: Installing dependencies: npm install --omit=dev",
          "Start command: node server.js (scripts.start, run directly: a plain node command with no prestart or poststart needs no npm beside it).",
          "The application must listen on 0.0.0.0:8080 (PORT=8080).",
        ],
      },
    },
  },
  {
    fn: "planNodeBuild",
    args: [
      {
        vars: {
          NODE_ENV: "production",
          CC_NODE_BUILD_TOOL: "npm-ci",
          CC_NODE_DEV_DEPENDENCIES: "maybe",
          CC_WORKER_RESTART: "sometimes",
          CC_TASK: "yes",
          CC_NPM_REGISTRY: "not a host",
        },
        files: {
          packageJson: '{"version":"1","main":"a.js","engines":{"node":">=30"}}',
          gitignore: "/node_modules\n",
          lockFiles: {
            packageLock: false,
            npmShrinkwrap: false,
            yarnLock: false,
            bunLock: false,
            pnpmLock: false,
          },
          yarnrcYml: false,
        },
        versions: [
          { version: "24.2.0", major: 24, lts: null, eol: false },
          { version: "23.11.1", major: 23, lts: null, eol: true },
          { version: "22.16.0", major: 22, lts: "Jod", eol: false },
          { version: "22.15.1", major: 22, lts: "Jod", eol: false },
          { version: "20.19.2", major: 20, lts: "Iron", eol: false },
          { version: "18.20.8", major: 18, lts: "Hydrogen", eol: true },
          { version: "16.20.2", major: 16, lts: "Gallium", eol: true },
          { version: "16.8.0", major: 16, lts: "Gallium", eol: true },
          { version: "14.21.3", major: 14, lts: "Fermium", eol: true },
          { version: "14.17.0", major: 14, lts: "Fermium", eol: true },
        ],
        npmVersions: ["6.14.18", "8.19.4", "10.9.2", "11.4.2"],
        npmEngines: {
          "8.19.4": "^12.13.0 || ^14.15.0 || >=16.0.0",
          "10.9.2": "^18.17.0 || >=20.5.0",
          "11.4.2": "^20.17.0 || >=22.9.0",
        },
      },
    ],
    out: {
      ok: false,
      errors: [
        'package.json: "name" is missing: add e.g. "name": "my-app".',
        'engines.node ">=30" in package.json: no available Node.js version satisfies this range; available majors: 24, 23, 22, 20, 18, 16, 14.',
        "CC_NODE_BUILD_TOOL=npm-ci needs package-lock.json or npm-shrinkwrap.json: commit one, or set CC_NODE_BUILD_TOOL=npm.",
        'CC_NODE_DEV_DEPENDENCIES="maybe" is not a choice: use install or ignore (or unset it).',
        'CC_WORKER_RESTART="sometimes" is not a restart policy: use always, on-failure, no.',
        'CC_TASK="yes" is not a boolean: use true or false (lower case).',
        'CC_NPM_REGISTRY="not a host" is not a registry host: use a host name such as npm.example.com (optionally with a path).',
      ],
    },
  },
  {
    fn: "planPhpBuild",
    args: [
      {
        vars: { CC_PRE_BUILD_HOOK: "echo pre", CC_POST_BUILD_HOOK: "echo post" },
        paths: { ".": "dir", "index.php": "file", "php.ini": "file", "composer.json": "file" },
        composerJson: "{}",
        task: false,
      },
    ],
    out: {
      ok: true,
      plan: {
        port: 8080,
        webroot: "/app",
        composer: {
          install: "composer install --no-interaction --no-progress --no-scripts --no-dev",
          dumpAutoload: null,
          devDependencies: false,
        },
        buildSteps: [
          { label: "Running CC_PRE_BUILD_HOOK", command: "echo pre" },
          {
            label: "Applying php.ini (web requests, workers and tasks)",
            command:
              'php -n -r \'$r = @parse_ini_file("php.ini", true); if ($r === false) { $e = error_get_last(); fwrite(STDERR, "php.ini is malformed: " . preg_replace("/^syntax error, /", "", $e["message"] ?? "it cannot be read") . "\\n"); exit(1); }\' && for d in /etc/php/8.4/cli/conf.d /etc/php/8.4/fpm/conf.d; do ln -sf /app/php.ini "$d/99-app-php.ini"; done',
          },
          {
            label:
              "Installing dependencies: composer install --no-interaction --no-progress --no-scripts --no-dev",
            command: "composer install --no-interaction --no-progress --no-scripts --no-dev",
            install: true,
          },
          { label: "Running CC_POST_BUILD_HOOK", command: "echo post" },
        ],
        buildEnv: {
          CC_PRE_BUILD_HOOK: "echo pre",
          CC_POST_BUILD_HOOK: "echo post",
          INSTANCE_TYPE: "build",
          COMPOSER_CACHE_DIR: "/cache/composer",
          COMPOSER_ALLOW_SUPERUSER: "1",
          COMPOSER_NO_AUDIT: "1",
        },
        start: ["phpserver", "php-server", "--listen", "0.0.0.0:8080"],
        runEnv: { PHPSERVER_ROOT: "/app", PHPSERVER_PORT: "8080" },
        workers: [],
        warnings: [],
        logLines: [
          "Webroot: the project root (index.php).",
          "Composer flags: --no-interaction --no-progress --no-scripts --no-dev (the default).",
          "Step 1/4: Running CC_PRE_BUILD_HOOK",
          "Step 2/4: Applying php.ini (web requests, workers and tasks)",
          "Step 3/4: Installing dependencies: composer install --no-interaction --no-progress --no-scripts --no-dev",
          "Step 4/4: Running CC_POST_BUILD_HOOK",
          "Start command: phpserver php-server --listen 0.0.0.0:8080",
        ],
      },
    },
  },
  {
    fn: "planPhpBuild",
    args: [
      {
        vars: { CC_PHP_DEV_DEPENDENCIES: "install" },
        paths: { ".": "dir", "index.php": "file", "composer.json": "file" },
        composerJson: '{"autoload": {"classmap": ["lib/"]}}',
        task: false,
      },
    ],
    out: {
      ok: true,
      plan: {
        port: 8080,
        webroot: "/app",
        composer: {
          install: "composer install --no-interaction --no-progress --no-scripts",
          dumpAutoload: "composer dump-autoload --no-interaction",
          devDependencies: true,
        },
        buildSteps: [
          {
            label: "Installing dependencies: composer install --no-interaction --no-progress --no-scripts",
            command: "composer install --no-interaction --no-progress --no-scripts",
            install: true,
          },
        ],
        buildEnv: {
          CC_PHP_DEV_DEPENDENCIES: "install",
          INSTANCE_TYPE: "build",
          COMPOSER_CACHE_DIR: "/cache/composer",
          COMPOSER_ALLOW_SUPERUSER: "1",
          COMPOSER_NO_AUDIT: "1",
        },
        start: ["phpserver", "php-server", "--listen", "0.0.0.0:8080"],
        runEnv: { PHPSERVER_ROOT: "/app", PHPSERVER_PORT: "8080" },
        workers: [],
        warnings: [],
        logLines: [
          "Webroot: the project root (index.php).",
          "CC_PHP_DEV_DEPENDENCIES=install: development dependencies are installed (no --no-dev).",
          "Composer flags: --no-interaction --no-progress --no-scripts (the default).",
          "Step 1/1: Installing dependencies: composer install --no-interaction --no-progress --no-scripts",
          "Start command: phpserver php-server --listen 0.0.0.0:8080",
        ],
      },
    },
  },
  {
    fn: "planPhpBuild",
    args: [
      {
        vars: { CC_PHP_DEV_DEPENDENCIES: "install" },
        paths: { ".": "dir", "index.php": "file", "composer.json": "file" },
        composerJson: "{}",
        task: false,
      },
    ],
    out: {
      ok: true,
      plan: {
        port: 8080,
        webroot: "/app",
        composer: {
          install: "composer install --no-interaction --no-progress --no-scripts",
          dumpAutoload: null,
          devDependencies: true,
        },
        buildSteps: [
          {
            label: "Installing dependencies: composer install --no-interaction --no-progress --no-scripts",
            command: "composer install --no-interaction --no-progress --no-scripts",
            install: true,
          },
        ],
        buildEnv: {
          CC_PHP_DEV_DEPENDENCIES: "install",
          INSTANCE_TYPE: "build",
          COMPOSER_CACHE_DIR: "/cache/composer",
          COMPOSER_ALLOW_SUPERUSER: "1",
          COMPOSER_NO_AUDIT: "1",
        },
        start: ["phpserver", "php-server", "--listen", "0.0.0.0:8080"],
        runEnv: { PHPSERVER_ROOT: "/app", PHPSERVER_PORT: "8080" },
        workers: [],
        warnings: [],
        logLines: [
          "Webroot: the project root (index.php).",
          "CC_PHP_DEV_DEPENDENCIES=install: development dependencies are installed (no --no-dev).",
          "Composer flags: --no-interaction --no-progress --no-scripts (the default).",
          "Step 1/1: Installing dependencies: composer install --no-interaction --no-progress --no-scripts",
          "Start command: phpserver php-server --listen 0.0.0.0:8080",
        ],
      },
    },
  },
  {
    fn: "planPhpBuild",
    args: [
      {
        vars: { CC_PHPSERVER_PORT: "x", CC_RUN_COMMAND: "php" },
        paths: { ".": "dir", "index.php": "missing" },
        composerJson: null,
        task: false,
      },
    ],
    out: {
      ok: false,
      errors: [
        'CC_PHPSERVER_PORT="x" is not a port: use an integer from 1 to 65535 (default 8080).',
        'CC_RUN_COMMAND must start with `phpserver php-server --listen 0.0.0.0:8080` (flags such as --debug, --mercure, --no-compress may follow) or `phpserver run --config <path_to_config_file>`; "php" does not start with phpserver.',
        "No index.php or index.html in the project root: one is required (set CC_WEBROOT if your webroot is another folder, e.g. /public).",
      ],
    },
  },
  {
    fn: "planDockerBuild",
    args: [
      {
        appId: "app_1",
        deploymentId: "dep_2",
        buildFlavor: "M",
        vars: { NODE_ENV: "production", NPM_TOKEN: "npm_secret_value", OTHER: "not declared" },
        platformVars: {
          APP_ID: "app_1",
          CC_APP_NAME: "web",
          APP_HOME: "/app",
          INSTANCE_NUMBER: "0",
          INSTANCE_ID: "",
          INSTANCE_TYPE: "build",
          PORT: "8080",
          CC_DEPLOYMENT_ID: "dep_2",
          CC_COMMIT_ID: "c0ffee",
        },
        dockerfileText:
          "FROM node:22\nARG NODE_ENV=production\nARG NPM_TOKEN\nARG INSTANCE_TYPE\nARG UNSET\nCMD node x",
        withoutCache: true,
        settings: {
          dockerfile: "Dockerfile",
          httpPort: 8080,
          tcpPort: null,
          buildkit: false,
          login: null,
          mountDockerSocket: false,
          ipv6Subnet: null,
        },
      },
    ],
    out: {
      ok: true,
      plan: {
        image: "pier-app/app_1:dep_2",
        dockerfile: "Dockerfile",
        buildArgs: { NODE_ENV: "production", NPM_TOKEN: "npm_secret_value", INSTANCE_TYPE: "build" },
        memoryBytes: 4294967296,
        buildkit: false,
        noCache: true,
        labels: { "pier.managed": "true", "pier.app": "app_1", "pier.deployment": "dep_2" },
        login: null,
        logLines: [
          "Dockerfile found: Dockerfile (1 stage).",
          "CMD found for the final image.",
          "No registry login (CC_DOCKER_LOGIN_USERNAME and CC_DOCKER_LOGIN_PASSWORD unset): pulls from the default registry are anonymous and rate-limited.",
          "Build args passed: NODE_ENV, NPM_TOKEN, INSTANCE_TYPE.",
          "ARGs without a variable of that name (their Dockerfile default applies): UNSET.",
          "Warning: NPM_TOKEN looks secret; a build arg's value can be read from the image's history.",
          "Builder: classic docker build (set CC_DOCKER_BUILDX=true to use BuildKit).",
          "Building without cache.",
        ],
      },
    },
  },
  {
    fn: "planDockerBuild",
    args: [
      {
        appId: "app_1",
        deploymentId: "dep_2",
        buildFlavor: "M",
        vars: { NODE_ENV: "production", NPM_TOKEN: "npm_secret_value", OTHER: "not declared" },
        platformVars: {
          APP_ID: "app_1",
          CC_APP_NAME: "web",
          APP_HOME: "/app",
          INSTANCE_NUMBER: "0",
          INSTANCE_ID: "",
          INSTANCE_TYPE: "build",
          PORT: "8080",
          CC_DEPLOYMENT_ID: "dep_2",
          CC_COMMIT_ID: "c0ffee",
        },
        dockerfileText:
          "FROM node:22\nARG NODE_ENV=production\nARG NPM_TOKEN\nARG INSTANCE_TYPE\nARG UNSET\nCMD node x",
        withoutCache: false,
        settings: {
          dockerfile: "a/Dockerfile",
          httpPort: 8080,
          tcpPort: null,
          buildkit: false,
          login: null,
          mountDockerSocket: false,
          ipv6Subnet: null,
        },
      },
    ],
    out: {
      ok: true,
      plan: {
        image: "pier-app/app_1:dep_2",
        dockerfile: "a/Dockerfile",
        buildArgs: { NODE_ENV: "production", NPM_TOKEN: "npm_secret_value", INSTANCE_TYPE: "build" },
        memoryBytes: 4294967296,
        buildkit: false,
        noCache: false,
        labels: { "pier.managed": "true", "pier.app": "app_1", "pier.deployment": "dep_2" },
        login: null,
        logLines: [
          "Dockerfile found: a/Dockerfile (1 stage).",
          "CMD found for the final image.",
          "No registry login (CC_DOCKER_LOGIN_USERNAME and CC_DOCKER_LOGIN_PASSWORD unset): pulls from the default registry are anonymous and rate-limited.",
          "Build args passed: NODE_ENV, NPM_TOKEN, INSTANCE_TYPE.",
          "ARGs without a variable of that name (their Dockerfile default applies): UNSET.",
          "Warning: NPM_TOKEN looks secret; a build arg's value can be read from the image's history.",
          "Builder: classic docker build (set CC_DOCKER_BUILDX=true to use BuildKit).",
        ],
      },
    },
  },
  {
    fn: "planDockerBuild",
    args: [
      {
        appId: "app_1",
        deploymentId: "dep_2",
        buildFlavor: "XL",
        vars: { NODE_ENV: "production", NPM_TOKEN: "npm_secret_value", OTHER: "not declared" },
        platformVars: {
          APP_ID: "app_1",
          CC_APP_NAME: "web",
          APP_HOME: "/app",
          INSTANCE_NUMBER: "0",
          INSTANCE_ID: "",
          INSTANCE_TYPE: "build",
          PORT: "8080",
          CC_DEPLOYMENT_ID: "dep_2",
          CC_COMMIT_ID: "c0ffee",
        },
        dockerfileText:
          "FROM node:22\nARG NODE_ENV=production\nARG NPM_TOKEN\nARG INSTANCE_TYPE\nARG UNSET\nCMD node x",
        withoutCache: false,
        settings: {
          dockerfile: "Dockerfile",
          httpPort: 8080,
          tcpPort: null,
          buildkit: false,
          login: null,
          mountDockerSocket: false,
          ipv6Subnet: null,
        },
      },
    ],
    out: {
      ok: true,
      plan: {
        image: "pier-app/app_1:dep_2",
        dockerfile: "Dockerfile",
        buildArgs: { NODE_ENV: "production", NPM_TOKEN: "npm_secret_value", INSTANCE_TYPE: "build" },
        memoryBytes: 17179869184,
        buildkit: false,
        noCache: false,
        labels: { "pier.managed": "true", "pier.app": "app_1", "pier.deployment": "dep_2" },
        login: null,
        logLines: [
          "Dockerfile found: Dockerfile (1 stage).",
          "CMD found for the final image.",
          "No registry login (CC_DOCKER_LOGIN_USERNAME and CC_DOCKER_LOGIN_PASSWORD unset): pulls from the default registry are anonymous and rate-limited.",
          "Build args passed: NODE_ENV, NPM_TOKEN, INSTANCE_TYPE.",
          "ARGs without a variable of that name (their Dockerfile default applies): UNSET.",
          "Warning: NPM_TOKEN looks secret; a build arg's value can be read from the image's history.",
          "Builder: classic docker build (set CC_DOCKER_BUILDX=true to use BuildKit).",
        ],
      },
    },
  },
  {
    fn: "planDockerBuild",
    args: [
      {
        appId: "app_1",
        deploymentId: "dep_2",
        buildFlavor: "M",
        vars: { NODE_ENV: "production", NPM_TOKEN: "npm_secret_value", OTHER: "not declared" },
        platformVars: {
          APP_ID: "app_1",
          CC_APP_NAME: "web",
          APP_HOME: "/app",
          INSTANCE_NUMBER: "0",
          INSTANCE_ID: "",
          INSTANCE_TYPE: "build",
          PORT: "8080",
          CC_DEPLOYMENT_ID: "dep_2",
          CC_COMMIT_ID: "c0ffee",
        },
        dockerfileText: "FROM img AS build\nCMD x\nFROM other",
        withoutCache: false,
        settings: {
          dockerfile: "Web.dockerfile",
          httpPort: 8080,
          tcpPort: null,
          buildkit: false,
          login: null,
          mountDockerSocket: false,
          ipv6Subnet: null,
        },
      },
    ],
    out: {
      ok: false,
      errors: [
        'Web.dockerfile has neither CMD nor ENTRYPOINT in its final stage: add CMD ["<command>", "<arg>"...] (or an ENTRYPOINT) so the container knows what to run.',
      ],
    },
  },
  {
    fn: "dockerSettings",
    args: [{ CC_DOCKER_LOGIN_PASSWORD: "hunter2\nx", CC_DOCKER_LOGIN_SERVER: "-bad" }],
    out: {
      settings: {
        dockerfile: "Dockerfile",
        httpPort: 8080,
        tcpPort: null,
        buildkit: false,
        login: null,
        mountDockerSocket: false,
        ipv6Subnet: null,
      },
      errors: [
        "CC_DOCKER_LOGIN_PASSWORD is set but CC_DOCKER_LOGIN_USERNAME is not: set both for a registry login, or neither.",
        "CC_DOCKER_LOGIN_PASSWORD must be a single line without NUL.",
        'CC_DOCKER_LOGIN_SERVER="-bad" is not a registry address: use a host name such as registry.example.com:5000.',
      ],
    },
  },
  {
    fn: "dockerSettings",
    args: [{ CC_DOCKERFILE: "/x", CC_DOCKER_EXPOSED_HTTP_PORT: "x", CC_DOCKER_BUILDX: "maybe" }],
    out: {
      settings: {
        dockerfile: "Dockerfile",
        httpPort: 8080,
        tcpPort: null,
        buildkit: false,
        login: null,
        mountDockerSocket: false,
        ipv6Subnet: null,
      },
      errors: [
        'CC_DOCKERFILE="/x" must be a relative path inside the repository, not an absolute path.',
        'CC_DOCKER_EXPOSED_HTTP_PORT="x" is not a port: use an integer from 1 to 65535.',
        'CC_DOCKER_BUILDX="maybe" is not a boolean: use true or false.',
      ],
    },
  },
  {
    fn: "dockerSettings",
    args: [{ CC_DOCKER_LOGIN_SERVER: "ghcr.io" }],
    out: {
      settings: {
        dockerfile: "Dockerfile",
        httpPort: 8080,
        tcpPort: null,
        buildkit: false,
        login: null,
        mountDockerSocket: false,
        ipv6Subnet: null,
      },
      errors: [
        "CC_DOCKER_LOGIN_SERVER is set but CC_DOCKER_LOGIN_USERNAME and CC_DOCKER_LOGIN_PASSWORD are not: set them too, or unset it.",
      ],
    },
  },
  {
    fn: "renderHaproxyConfig",
    args: [
      {
        layout: {
          backends: [
            {
              appId: "app-a",
              hostname: "a.localhost",
              slots: [{ host: "127.0.0.1", port: 1 }, null],
              aliases: [],
              forceHttps: true,
            },
            {
              appId: "app-b",
              hostname: "b.localhost",
              slots: [{ host: "127.0.0.1", port: 2 }, null],
              aliases: [],
              forceHttps: false,
            },
          ],
        },
        listenHost: "0.0.0.0",
        listenPort: 8000,
        dir: "/e",
        https: { host: "0.0.0.0", port: 8443 },
      },
    ],
    out: '# Rendered by Pier from its route table. Do not edit: the next change overwrites it.\nglobal\n  daemon\n  pidfile /e/haproxy.pid\n  stats socket /e/admin.sock mode 600 level admin expose-fd listeners\n  hard-stop-after 5m\n  ssl-default-bind-ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305\n\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 65s\n  timeout server 300s\n  timeout http-request 30s\n  timeout http-keep-alive 65s\n  timeout queue 30s\n  option redispatch\n  retries 6\n  http-reuse always\n  retry-on conn-failure empty-response\n  option http-no-delay\n\nfrontend edge\n  bind 0.0.0.0:8000\n  tcp-request connection track-sc0 src,ipmask(32,64) table per_source\n  tcp-request connection reject if { sc0_conn_cur(per_source) gt 256 }\n  http-request return status 200 content-type text/plain string "d989a88d58913246" if { path /.pier/edge-version } { req.hdr(host) -m str pier-edge.invalid }\n  http-request return status 200 content-type text/plain lf-string "%[path,field(4,/),map(/e/acme.map)]" if { path_beg /.well-known/acme-challenge/ } { path,field(4,/),map(/e/acme.map) -m found }\n  http-request disable-l7-retry unless { method GET HEAD OPTIONS PUT DELETE }\n  http-request set-header X-Forwarded-For %[src]\n  http-request set-header X-Real-IP %[src]\n  http-request set-header Forwarded for=%[src];proto=http\n  http-request set-header X-Forwarded-Proto http\n  http-request set-header X-Forwarded-Host %[req.hdr(host)]\n  http-request set-header X-Forwarded-Port %[dst_port]\n  use_backend %[req.hdr(host),field(1,:),lower,map(/e/hosts.map)]\n  default_backend no_app\n\nfrontend edge_tls\n  bind 0.0.0.0:8443 ssl crt /e/tls/default.pem crt-list /e/tls/certs.list alpn h2,http/1.1 ssl-min-ver TLSv1.2\n  tcp-request connection track-sc0 src,ipmask(32,64) table per_source\n  tcp-request connection reject if { sc0_conn_cur(per_source) gt 256 }\n  http-request disable-l7-retry unless { method GET HEAD OPTIONS PUT DELETE }\n  http-request set-header X-Forwarded-For %[src]\n  http-request set-header X-Real-IP %[src]\n  http-request set-header Forwarded for=%[src];proto=https\n  http-request set-header X-Forwarded-Proto https\n  http-request set-header X-Forwarded-Host %[req.hdr(host)]\n  http-request set-header X-Forwarded-Port %[dst_port]\n  use_backend %[req.hdr(host),field(1,:),lower,map(/e/hosts.map)]\n  default_backend no_app\n\nbackend per_source\n  stick-table type ipv6 size 100k expire 60s store conn_cur\n\nbackend no_app\n  http-request return status 404 content-type text/html string "<!doctype html><html><head><meta charset=utf-8><title>No app here</title></head><body style=\'font-family:sans-serif;margin:3em\'><h1>No app here</h1><p>No app is served at this address.</p><p><small>Pier</small></p></body></html>"\n\nbackend app_app_a\n  balance roundrobin\n  http-error status 503 content-type text/html string "<!doctype html><html><head><meta charset=utf-8><title>App not running</title></head><body style=\'font-family:sans-serif;margin:3em\'><h1>App not running</h1><p>This app has no running instance. Deploy it, or start it with pier restart.</p><p><small>Pier</small></p></body></html>"\n  http-request redirect location https://%[req.hdr(host),field(1,:)]:8443%[capture.req.uri] code 301 unless { ssl_fc }\n  server s0 127.0.0.1:1\n  server s1 127.0.0.1:1 disabled\n\nbackend app_app_b\n  balance roundrobin\n  http-error status 503 content-type text/html string "<!doctype html><html><head><meta charset=utf-8><title>App not running</title></head><body style=\'font-family:sans-serif;margin:3em\'><h1>App not running</h1><p>This app has no running instance. Deploy it, or start it with pier restart.</p><p><small>Pier</small></p></body></html>"\n  server s0 127.0.0.1:2\n  server s1 127.0.0.1:1 disabled\n',
  },
  {
    fn: "renderHaproxyConfig",
    args: [
      {
        layout: {
          backends: [
            {
              appId: "app-a",
              hostname: "a.localhost",
              slots: [{ host: "127.0.0.1", port: 1001 }, null],
              aliases: [],
              forceHttps: false,
            },
            { appId: "app-b", hostname: "b.localhost", slots: [null, null], aliases: [], forceHttps: false },
          ],
        },
        listenHost: "0.0.0.0",
        listenPort: 8000,
        dir: "/d",
        https: { host: "0.0.0.0", port: 8443 },
      },
    ],
    out: '# Rendered by Pier from its route table. Do not edit: the next change overwrites it.\nglobal\n  daemon\n  pidfile /d/haproxy.pid\n  stats socket /d/admin.sock mode 600 level admin expose-fd listeners\n  hard-stop-after 5m\n  ssl-default-bind-ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305\n\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 65s\n  timeout server 300s\n  timeout http-request 30s\n  timeout http-keep-alive 65s\n  timeout queue 30s\n  option redispatch\n  retries 6\n  http-reuse always\n  retry-on conn-failure empty-response\n  option http-no-delay\n\nfrontend edge\n  bind 0.0.0.0:8000\n  tcp-request connection track-sc0 src,ipmask(32,64) table per_source\n  tcp-request connection reject if { sc0_conn_cur(per_source) gt 256 }\n  http-request return status 200 content-type text/plain string "32df0b2b53d24ece" if { path /.pier/edge-version } { req.hdr(host) -m str pier-edge.invalid }\n  http-request return status 200 content-type text/plain lf-string "%[path,field(4,/),map(/d/acme.map)]" if { path_beg /.well-known/acme-challenge/ } { path,field(4,/),map(/d/acme.map) -m found }\n  http-request disable-l7-retry unless { method GET HEAD OPTIONS PUT DELETE }\n  http-request set-header X-Forwarded-For %[src]\n  http-request set-header X-Real-IP %[src]\n  http-request set-header Forwarded for=%[src];proto=http\n  http-request set-header X-Forwarded-Proto http\n  http-request set-header X-Forwarded-Host %[req.hdr(host)]\n  http-request set-header X-Forwarded-Port %[dst_port]\n  use_backend %[req.hdr(host),field(1,:),lower,map(/d/hosts.map)]\n  default_backend no_app\n\nfrontend edge_tls\n  bind 0.0.0.0:8443 ssl crt /d/tls/default.pem crt-list /d/tls/certs.list alpn h2,http/1.1 ssl-min-ver TLSv1.2\n  tcp-request connection track-sc0 src,ipmask(32,64) table per_source\n  tcp-request connection reject if { sc0_conn_cur(per_source) gt 256 }\n  http-request disable-l7-retry unless { method GET HEAD OPTIONS PUT DELETE }\n  http-request set-header X-Forwarded-For %[src]\n  http-request set-header X-Real-IP %[src]\n  http-request set-header Forwarded for=%[src];proto=https\n  http-request set-header X-Forwarded-Proto https\n  http-request set-header X-Forwarded-Host %[req.hdr(host)]\n  http-request set-header X-Forwarded-Port %[dst_port]\n  use_backend %[req.hdr(host),field(1,:),lower,map(/d/hosts.map)]\n  default_backend no_app\n\nbackend per_source\n  stick-table type ipv6 size 100k expire 60s store conn_cur\n\nbackend no_app\n  http-request return status 404 content-type text/html string "<!doctype html><html><head><meta charset=utf-8><title>No app here</title></head><body style=\'font-family:sans-serif;margin:3em\'><h1>No app here</h1><p>No app is served at this address.</p><p><small>Pier</small></p></body></html>"\n\nbackend app_app_a\n  balance roundrobin\n  http-error status 503 content-type text/html string "<!doctype html><html><head><meta charset=utf-8><title>App not running</title></head><body style=\'font-family:sans-serif;margin:3em\'><h1>App not running</h1><p>This app has no running instance. Deploy it, or start it with pier restart.</p><p><small>Pier</small></p></body></html>"\n  server s0 127.0.0.1:1001\n  server s1 127.0.0.1:1 disabled\n\nbackend app_app_b\n  balance roundrobin\n  http-error status 503 content-type text/html string "<!doctype html><html><head><meta charset=utf-8><title>App not running</title></head><body style=\'font-family:sans-serif;margin:3em\'><h1>App not running</h1><p>This app has no running instance. Deploy it, or start it with pier restart.</p><p><small>Pier</small></p></body></html>"\n  server s0 127.0.0.1:1 disabled\n  server s1 127.0.0.1:1 disabled\n',
  },
  {
    fn: "renderHaproxyConfig",
    args: [
      {
        layout: {
          backends: [
            {
              appId: "app-a",
              hostname: "a.localhost",
              slots: [{ host: "127.0.0.1", port: 1001 }, null],
              aliases: [],
              forceHttps: false,
            },
            { appId: "app-b", hostname: "b.localhost", slots: [null, null], aliases: [], forceHttps: false },
          ],
        },
        listenHost: "0.0.0.0",
        listenPort: 8000,
        dir: "/d",
        https: { host: "0.0.0.0", port: 8443 },
        maxConnPerSource: 50,
      },
    ],
    out: '# Rendered by Pier from its route table. Do not edit: the next change overwrites it.\nglobal\n  daemon\n  pidfile /d/haproxy.pid\n  stats socket /d/admin.sock mode 600 level admin expose-fd listeners\n  hard-stop-after 5m\n  ssl-default-bind-ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305\n\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 65s\n  timeout server 300s\n  timeout http-request 30s\n  timeout http-keep-alive 65s\n  timeout queue 30s\n  option redispatch\n  retries 6\n  http-reuse always\n  retry-on conn-failure empty-response\n  option http-no-delay\n\nfrontend edge\n  bind 0.0.0.0:8000\n  tcp-request connection track-sc0 src,ipmask(32,64) table per_source\n  tcp-request connection reject if { sc0_conn_cur(per_source) gt 50 }\n  http-request return status 200 content-type text/plain string "d171b79e1d5fae74" if { path /.pier/edge-version } { req.hdr(host) -m str pier-edge.invalid }\n  http-request return status 200 content-type text/plain lf-string "%[path,field(4,/),map(/d/acme.map)]" if { path_beg /.well-known/acme-challenge/ } { path,field(4,/),map(/d/acme.map) -m found }\n  http-request disable-l7-retry unless { method GET HEAD OPTIONS PUT DELETE }\n  http-request set-header X-Forwarded-For %[src]\n  http-request set-header X-Real-IP %[src]\n  http-request set-header Forwarded for=%[src];proto=http\n  http-request set-header X-Forwarded-Proto http\n  http-request set-header X-Forwarded-Host %[req.hdr(host)]\n  http-request set-header X-Forwarded-Port %[dst_port]\n  use_backend %[req.hdr(host),field(1,:),lower,map(/d/hosts.map)]\n  default_backend no_app\n\nfrontend edge_tls\n  bind 0.0.0.0:8443 ssl crt /d/tls/default.pem crt-list /d/tls/certs.list alpn h2,http/1.1 ssl-min-ver TLSv1.2\n  tcp-request connection track-sc0 src,ipmask(32,64) table per_source\n  tcp-request connection reject if { sc0_conn_cur(per_source) gt 50 }\n  http-request disable-l7-retry unless { method GET HEAD OPTIONS PUT DELETE }\n  http-request set-header X-Forwarded-For %[src]\n  http-request set-header X-Real-IP %[src]\n  http-request set-header Forwarded for=%[src];proto=https\n  http-request set-header X-Forwarded-Proto https\n  http-request set-header X-Forwarded-Host %[req.hdr(host)]\n  http-request set-header X-Forwarded-Port %[dst_port]\n  use_backend %[req.hdr(host),field(1,:),lower,map(/d/hosts.map)]\n  default_backend no_app\n\nbackend per_source\n  stick-table type ipv6 size 100k expire 60s store conn_cur\n\nbackend no_app\n  http-request return status 404 content-type text/html string "<!doctype html><html><head><meta charset=utf-8><title>No app here</title></head><body style=\'font-family:sans-serif;margin:3em\'><h1>No app here</h1><p>No app is served at this address.</p><p><small>Pier</small></p></body></html>"\n\nbackend app_app_a\n  balance roundrobin\n  http-error status 503 content-type text/html string "<!doctype html><html><head><meta charset=utf-8><title>App not running</title></head><body style=\'font-family:sans-serif;margin:3em\'><h1>App not running</h1><p>This app has no running instance. Deploy it, or start it with pier restart.</p><p><small>Pier</small></p></body></html>"\n  server s0 127.0.0.1:1001\n  server s1 127.0.0.1:1 disabled\n\nbackend app_app_b\n  balance roundrobin\n  http-error status 503 content-type text/html string "<!doctype html><html><head><meta charset=utf-8><title>App not running</title></head><body style=\'font-family:sans-serif;margin:3em\'><h1>App not running</h1><p>This app has no running instance. Deploy it, or start it with pier restart.</p><p><small>Pier</small></p></body></html>"\n  server s0 127.0.0.1:1 disabled\n  server s1 127.0.0.1:1 disabled\n',
  },
];
