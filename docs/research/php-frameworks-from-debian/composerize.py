#!/usr/bin/env python3
"""composerize.py LIBDIR VERSION: write a composer.json into each Debian package root under LIBDIR
(a dir holding a pkg-php-tools autoload.php), named as upstream, so that an app can require them
through a path repository. Dependencies are read from the autoload.php's require_once lines."""
import json, os, re, sys

lib, default_version = sys.argv[1], sys.argv[2]
def kebab(s): return re.sub(r'(?<!^)(?=[A-Z])', '-', s).lower()
def name_of(rel):
    p = rel.split('/')
    if p[0] == 'Symfony':
        kind, n = p[1], p[2]
        if kind == 'Component': return 'symfony/' + kebab(n)
        if kind == 'Bundle': return 'symfony/' + kebab(n)
        if kind == 'Bridge': return 'symfony/' + kebab(n) + '-bridge'
        if kind == 'Contracts': return 'symfony/' + kebab(n) + '-contracts'
    if p[0] == 'Twig' and len(p) == 1: return 'twig/twig'
    if rel == 'Illuminate': return 'laravel/framework'
    if p[0] == 'Psr': return 'psr/' + kebab(p[1])
    if p[0] == 'Illuminate': return 'illuminate/' + kebab(p[1])
    return 'debian/' + '-'.join(kebab(x) for x in p)
roots = {}
for d, dirs, files in os.walk(lib):
    rel = os.path.relpath(d, lib)
    if 'autoload.php' in files and rel != '.':
        roots[rel] = name_of(rel)
names = {}
for rel, name in sorted(roots.items()):
    src = open(os.path.join(lib, rel, 'autoload.php')).read()
    requires, files = {}, []
    for m in re.finditer(r"require_once\s+(?:\\dirname\(__DIR__, (\d+)\)|__DIR__)\s*\.\s*'/?([^']+)'", src):
        up, path = m.group(1), m.group(2)
        if path.endswith('autoload.php'):
            base = rel if up is None else '/'.join(rel.split('/')[:-int(up)])
            dep = os.path.normpath(os.path.join(base, os.path.dirname(path)))
            if dep in roots: requires[roots[dep]] = '*'
        elif up is None:
            files.append(path)
    ns = rel.replace('/', '\\') + '\\'
    cj = {'name': name, 'version': default_version, 'description': f'Debian\'s /usr/share/php/{rel}',
          'require': requires, 'autoload': {'classmap': ['']}}  # classmap: Debian's dirs do not always follow PSR-4 (illuminate/macroable, collections...)
    if name == 'laravel/framework':   # Debian's php-laravel-framework: Illuminate/Foundation + the aggregate autoloader
        cj['autoload'] = {'classmap': ['Foundation/']}
        files = ['Foundation/helpers.php']
    if files: cj['autoload']['files'] = files
    if name == 'symfony/runtime':
        cj['type'] = 'composer-plugin'
        cj['require'].update({'composer-plugin-api': '^1.0|^2.0', 'symfony/filesystem': '*'})
        cj['extra'] = {'class': 'Symfony\\Component\\Runtime\\Internal\\ComposerPlugin'}
    json.dump(cj, open(os.path.join(lib, rel, 'composer.json'), 'w'), indent=4)
    print(name, rel)
