#!/bin/bash
# mk-symfony.sh DEST : a Symfony 6.4 app from Debian trixie's php-symfony-* files
set -euo pipefail
R=/tmp/fw-research; D="$1"; rm -rf "$D"; mkdir -p "$D"/{public,src/Controller,src/Runtime,config,templates}
$R/bin/mklib.sh $R/root/sym "$D/lib"
cd "$D"
cat > composer.json <<'EOF'
{
    "name": "pier-test/symfony",
    "type": "project",
    "require": { "php": ">=8.1" },
    "autoload": { "psr-4": { "App\\": "src/" }, "files": ["lib/autoload.php"] },
    "config": { "optimize-autoloader": false }
}
EOF
cat > .env <<'EOF'
APP_ENV=prod
APP_DEBUG=0
APP_SECRET=change-me-0123456789
EOF
# what symfony/runtime's composer plugin would write to vendor/autoload_runtime.php (its template, filled in)
sed -e "s#__DIR__.'/autoload.php'#__DIR__.'/vendor/autoload.php'#" \
    -e "s#%runtime_class%#'Symfony\\\\\\\\Component\\\\\\\\Runtime\\\\\\\\SymfonyRuntime'#" \
    -e "s#%runtime_options%#['project_dir' => __DIR__]#" \
    lib/Symfony/Component/Runtime/Internal/autoload_runtime.template > autoload_runtime.php
cat > public/index.php <<'EOF'
<?php

use App\Kernel;

require_once dirname(__DIR__).'/autoload_runtime.php';

return function (array $context) {
    return new Kernel($context['APP_ENV'], (bool) $context['APP_DEBUG']);
};
EOF
cat > src/Kernel.php <<'EOF'
<?php

namespace App;

use Symfony\Bundle\FrameworkBundle\FrameworkBundle;
use Symfony\Bundle\FrameworkBundle\Kernel\MicroKernelTrait;
use Symfony\Bundle\TwigBundle\TwigBundle;
use Symfony\Component\DependencyInjection\Loader\Configurator\ContainerConfigurator;
use Symfony\Component\HttpKernel\Kernel as BaseKernel;
use Symfony\Component\Routing\Loader\Configurator\RoutingConfigurator;

class Kernel extends BaseKernel
{
    use MicroKernelTrait;

    public function registerBundles(): iterable
    {
        yield new FrameworkBundle();
        yield new TwigBundle();
    }

    public function getCacheDir(): string
    {
        return ($_SERVER['APP_CACHE_DIR'] ?? sys_get_temp_dir().'/sf-cache').'/'.$this->environment;
    }

    public function getLogDir(): string
    {
        return $_SERVER['APP_LOG_DIR'] ?? sys_get_temp_dir().'/sf-log';
    }

    protected function configureContainer(ContainerConfigurator $c): void
    {
        $c->extension('framework', [
            'secret' => '%env(APP_SECRET)%',
            'http_method_override' => false,
            'handle_all_throwables' => true,
            'php_errors' => ['log' => true],
            'router' => ['utf8' => true],
        ]);
        $c->extension('twig', ['default_path' => '%kernel.project_dir%/templates']);
        $c->services()->defaults()->autowire()->autoconfigure()
            ->load('App\\Controller\\', __DIR__.'/Controller/');
    }

    protected function configureRoutes(RoutingConfigurator $routes): void
    {
        $routes->import(__DIR__.'/Controller/', 'attribute');
    }
}
EOF
cat > src/Controller/HomeController.php <<'EOF'
<?php

namespace App\Controller;

use Symfony\Bundle\FrameworkBundle\Controller\AbstractController;
use Symfony\Component\HttpFoundation\JsonResponse;
use Symfony\Component\HttpFoundation\Request;
use Symfony\Component\HttpFoundation\Response;
use Symfony\Component\HttpKernel\Kernel;
use Symfony\Component\Routing\Attribute\Route;

class HomeController extends AbstractController
{
    private int $hits = 0;

    #[Route('/', name: 'home')]
    public function home(): Response
    {
        return $this->render('home.html.twig', ['version' => Kernel::VERSION]);
    }

    #[Route('/hello/{name}', name: 'hello')]
    public function hello(string $name, Request $request): JsonResponse
    {
        return $this->json([
            'hello' => $name,
            'symfony' => Kernel::VERSION,
            'pid' => getmypid(),
            'hits_in_this_process' => ++$this->hits,
            'worker' => $_SERVER['FRANKENPHP_WORKER'] ?? null,
            'q' => $request->query->get('q'),
        ]);
    }
}
EOF
cat > templates/home.html.twig <<'EOF'
<!doctype html>
<html><head><title>Symfony on Pier</title></head>
<body><h1>Hello from Symfony {{ version }}</h1><p>Rendered by Twig {{ constant('Twig\\Environment::VERSION') }}.</p></body></html>
EOF
cat > src/Runtime/FrankenPhpRuntime.php <<'EOF'
<?php

namespace App\Runtime;

use Symfony\Component\HttpKernel\HttpKernelInterface;
use Symfony\Component\Runtime\RunnerInterface;
use Symfony\Component\Runtime\SymfonyRuntime;

/** Symfony 6.4's runtime has no FrankenPHP runner (symfony/runtime gained one in 7.4): this is the pattern. */
class FrankenPhpRuntime extends SymfonyRuntime
{
    public function __construct(array $options = [])
    {
        $options['frankenphp_loop_max'] = (int) ($options['frankenphp_loop_max'] ?? $_SERVER['FRANKENPHP_LOOP_MAX'] ?? $_ENV['FRANKENPHP_LOOP_MAX'] ?? 500);
        parent::__construct($options);
    }

    public function getRunner(?object $application): RunnerInterface
    {
        if ($application instanceof HttpKernelInterface && ($_SERVER['FRANKENPHP_WORKER'] ?? false)) {
            return new FrankenPhpRunner($application, $this->options['frankenphp_loop_max']);
        }

        return parent::getRunner($application);
    }
}
EOF
cat > src/Runtime/FrankenPhpRunner.php <<'EOF'
<?php

namespace App\Runtime;

use Symfony\Component\HttpFoundation\Request;
use Symfony\Component\HttpKernel\HttpKernelInterface;
use Symfony\Component\HttpKernel\TerminableInterface;
use Symfony\Component\Runtime\RunnerInterface;

/** The kernel is booted once; each frankenphp_handle_request() call handles one request. */
class FrankenPhpRunner implements RunnerInterface
{
    public function __construct(private HttpKernelInterface $kernel, private int $loopMax)
    {
    }

    public function run(): int
    {
        // FrankenPHP's worker boots with a $_SERVER of its own; keep it to rebuild each request's
        $server = array_filter($_SERVER, static fn ($k) => !str_starts_with($k, 'HTTP_'), ARRAY_FILTER_USE_KEY);
        $server['APP_RUNTIME_MODE'] = 'web=1&worker=1';

        $handler = function () use ($server, &$sfRequest, &$sfResponse): void {
            $_SERVER += $server;               // request values first, boot-time env after
            $sfRequest = Request::createFromGlobals();
            $sfResponse = $this->kernel->handle($sfRequest);
            $sfResponse->send();
        };

        $loops = 0;
        do {
            $ret = \frankenphp_handle_request($handler);
            if ($this->kernel instanceof TerminableInterface && $sfRequest && $sfResponse) {
                $this->kernel->terminate($sfRequest, $sfResponse);
            }
            gc_collect_cycles();
        } while ($ret && (0 >= $this->loopMax || ++$loops < $this->loopMax));

        return 0;
    }
}
EOF
