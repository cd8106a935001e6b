// The files of the Symfony 6.4 app the framework e2e tests push (test/e2e/php-frameworks.test.ts): Symfony's
// skeleton (stock public/index.php, MicroKernelTrait), and the FrankenPHP runtime its worker mode needs.
/** Symfony's skeleton, a Twig page, a JSON route with a per-kernel counter, and the FrankenPHP runtime. */
export const SYMFONY_FILES: Record<string, string> = {
  ".gitignore": "/vendor/\n",
  ".env": "APP_ENV=prod\nAPP_DEBUG=0\nAPP_SECRET=2f0e6c1d9a8b7e6f5a4b3c2d1e0f9a8b\n",
  "public/index.php": `<?php

use App\\Kernel;

require_once dirname(__DIR__).'/vendor/autoload_runtime.php';

return function (array $context) {
    return new Kernel($context['APP_ENV'], (bool) $context['APP_DEBUG']);
};
`,
  "src/Kernel.php": `<?php

namespace App;

use Symfony\\Bundle\\FrameworkBundle\\FrameworkBundle;
use Symfony\\Bundle\\FrameworkBundle\\Kernel\\MicroKernelTrait;
use Symfony\\Bundle\\TwigBundle\\TwigBundle;
use Symfony\\Component\\DependencyInjection\\Loader\\Configurator\\ContainerConfigurator;
use Symfony\\Component\\HttpKernel\\Kernel as BaseKernel;
use Symfony\\Component\\Routing\\Loader\\Configurator\\RoutingConfigurator;

class Kernel extends BaseKernel
{
    use MicroKernelTrait;

    public function registerBundles(): iterable
    {
        yield new FrameworkBundle();
        yield new TwigBundle();
    }

    protected function configureContainer(ContainerConfigurator $c): void
    {
        $c->extension('framework', [
            'secret' => '%env(APP_SECRET)%',
            'http_method_override' => false,
            'handle_all_throwables' => true,
            'php_errors' => ['log' => true],
        ]);
        $c->extension('twig', ['default_path' => '%kernel.project_dir%/templates']);
        $c->services()->defaults()->autowire()->autoconfigure()
            ->load('App\\\\Controller\\\\', __DIR__.'/Controller/');
    }

    protected function configureRoutes(RoutingConfigurator $routes): void
    {
        $routes->import(__DIR__.'/Controller/', 'attribute');
    }
}
`,
  "src/Controller/HomeController.php": `<?php

namespace App\\Controller;

use Symfony\\Bundle\\FrameworkBundle\\Controller\\AbstractController;
use Symfony\\Component\\HttpFoundation\\JsonResponse;
use Symfony\\Component\\HttpFoundation\\Response;
use Symfony\\Component\\HttpKernel\\Kernel;
use Symfony\\Component\\Routing\\Attribute\\Route;

class HomeController extends AbstractController
{
    /** The controller is a service of the kernel's container: it lives as long as the kernel. */
    private int $hits = 0;

    #[Route('/', name: 'home')]
    public function home(): Response
    {
        return $this->render('home.html.twig', ['version' => Kernel::VERSION]);
    }

    #[Route('/hello/{name}', name: 'hello')]
    public function hello(string $name): JsonResponse
    {
        return $this->json([
            'hello' => $name,
            'pid' => getmypid(),
            'hits' => ++$this->hits,
            'web' => $this->getParameter('kernel.runtime_mode.web'),
        ]);
    }
}
`,
  "templates/home.html.twig": `<!doctype html>
<html><head><title>Symfony on Pier</title></head>
<body><h1>Hello from Symfony {{ version }}</h1><p>Rendered by Twig {{ constant('Twig\\\\Environment::VERSION') }}.</p>
<p><a href="{{ url('hello', {name: 'pier'}) }}">hello</a></p></body></html>
`,
  "src/Runtime/FrankenPhpRuntime.php": `<?php

namespace App\\Runtime;

use Symfony\\Component\\HttpKernel\\HttpKernelInterface;
use Symfony\\Component\\Runtime\\RunnerInterface;
use Symfony\\Component\\Runtime\\SymfonyRuntime;

/** Symfony 6.4's runtime has no FrankenPHP runner (symfony/runtime has one from 7.4): the app brings it. */
class FrankenPhpRuntime extends SymfonyRuntime
{
    public function getRunner(?object $application): RunnerInterface
    {
        if ($application instanceof HttpKernelInterface && ($_SERVER['FRANKENPHP_WORKER'] ?? false)) {
            return new FrankenPhpRunner($application, (int) ($_SERVER['FRANKENPHP_LOOP_MAX'] ?? 500));
        }

        return parent::getRunner($application);
    }
}
`,
  "src/Runtime/FrankenPhpRunner.php": `<?php

namespace App\\Runtime;

use Symfony\\Component\\HttpFoundation\\Request;
use Symfony\\Component\\HttpKernel\\HttpKernelInterface;
use Symfony\\Component\\HttpKernel\\TerminableInterface;
use Symfony\\Component\\Runtime\\RunnerInterface;

/** The kernel is booted once; each frankenphp_handle_request() call handles one request. */
class FrankenPhpRunner implements RunnerInterface
{
    public function __construct(private HttpKernelInterface $kernel, private int $loopMax)
    {
    }

    public function run(): int
    {
        // What the runtime put in $_SERVER at boot (.env, APP_ENV...) is added to each request's.
        $boot = array_filter($_SERVER, static fn ($k) => !str_starts_with($k, 'HTTP_'), ARRAY_FILTER_USE_KEY);
        // Symfony's runtime mode says "web" (its default follows PHP_SAPI, which is cli in the workers).
        $boot['APP_RUNTIME_MODE'] = 'web=1&worker=1';
        $request = $response = null;
        $handler = function () use ($boot, &$request, &$response): void {
            $_SERVER += $boot;
            $request = Request::createFromGlobals();
            $response = $this->kernel->handle($request);
            $response->send();
        };
        $loops = 0;
        do {
            $more = \\frankenphp_handle_request($handler);
            if ($this->kernel instanceof TerminableInterface && $request && $response) {
                $this->kernel->terminate($request, $response);
            }
            $request = $response = null;
            gc_collect_cycles();
        } while ($more && (0 >= $this->loopMax || ++$loops < $this->loopMax));

        return 0;
    }
}
`,
};
