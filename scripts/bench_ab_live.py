#!/usr/bin/env python3
"""A/B of two server builds under the same live load, both running at once.

Both builds start on empty directories, each gets its own `cairn bench run` writer
(1,000 targets at 15 s with the default alert rules and 1 h dashboards, as issue 19's
(a)), and from --loop-at on the alert rules are sent back to back, each to A and then
to B, for --loop-secs. A machine's noise then falls on both alike, which a run of one
build after the other cannot promise; only the pair compares, not runs of different
pairs. Prints each rule's median latency on A and B and their sums, and writes each
writer's report (CPU per million samples, peak RSS, disk) to /tmp/ab-NAME-{a,b}.txt.

  scripts/bench_ab_live.py NAME BUILD_A BUILD_B [--targets 1000] [--minutes 10]
      [--loop-at 300] [--loop-secs 240] [--rules PATTERN,...]

`--rules` keeps only the rules whose alert name contains one of the patterns. The
writers are run by BENCH (environment, default target/release/cairn). BUILD_A and
BUILD_B may be scripts that set an environment and exec a build.
"""
import argparse, os, shutil, statistics, subprocess, sys, time, urllib.parse, urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES = os.path.join(ROOT, 'crates/bench/data/node-exporter-alerts.yaml')

ap = argparse.ArgumentParser()
ap.add_argument('name')
ap.add_argument('build_a')
ap.add_argument('build_b')
ap.add_argument('--targets', type=int, default=1000)
ap.add_argument('--minutes', type=int, default=10)
ap.add_argument('--loop-at', type=int, default=300)
ap.add_argument('--loop-secs', type=int, default=240)
ap.add_argument('--rules', default='')
args = ap.parse_args()
if args.loop_at + args.loop_secs > args.minutes * 60:
    sys.exit('the rule loop must end before the writers do')

with open(RULES) as f:
    rules = [(r['alert'], r['expr']) for g in yaml.safe_load(f)['groups'] for r in g['rules'] if 'alert' in r]
patterns = [p for p in args.rules.split(',') if p]
rules = [(n, e) for n, e in rules if not patterns or any(p in n for p in patterns)]
bench = os.environ.get('BENCH', os.path.join(ROOT, 'target/release/cairn'))

servers, writers = [], []
for side, build, port in (('a', args.build_a, 19311), ('b', args.build_b, 19312)):
    data = f'/tmp/ab-{args.name}-{side}-data'
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    log = open(f'/tmp/ab-{args.name}-{side}-server.log', 'w')
    servers.append((port, subprocess.Popen(
        [build, '--storage.path', data, '--http.listen-addr', f'127.0.0.1:{port}'], stdout=log, stderr=log)))
time.sleep(2)
for (side, (port, server)) in zip('ab', servers):
    url = f'http://127.0.0.1:{port}'
    report = open(f'/tmp/ab-{args.name}-{side}.txt', 'w')
    writers.append(subprocess.Popen(
        [bench, 'bench', 'run', '--write-url', f'{url}/api/v1/write', '--query-url', url,
         '--pid', str(server.pid), '--data-dir', f'/tmp/ab-{args.name}-{side}-data',
         '--name', f'{args.name}-{side}', '--targets', str(args.targets), '--duration', f'{args.minutes}m',
         '--range-queries', '1h'], stdout=report, stderr=subprocess.STDOUT))

time.sleep(args.loop_at)
latencies = {(side, n): [] for side in 'ab' for n, _ in rules}
end = time.time() + args.loop_secs
while time.time() < end:
    for n, expr in rules:
        for side, (port, _) in zip('ab', servers):
            query = urllib.parse.urlencode({'query': expr, 'time': f'{time.time():.3f}'})
            t0 = time.perf_counter()
            urllib.request.urlopen(f'http://127.0.0.1:{port}/api/v1/query?{query}').read()
            latencies[(side, n)].append((time.perf_counter() - t0) * 1000)

for w in writers:
    w.wait()
for _, server in servers:
    server.terminate()
    server.wait()

print(f'{"rule (median ms)":<40} {"A":>8} {"B":>8}')
for n, _ in rules:
    print(f'{n:<40} ' + ' '.join(f'{statistics.median(latencies[(s, n)]):8.2f}' for s in 'ab'))
sums = [sum(statistics.median(latencies[(s, n)]) for n, _ in rules) for s in 'ab']
print(f'{"sum of medians":<40} {sums[0]:8.1f} {sums[1]:8.1f}')
print(f'writers\' reports: /tmp/ab-{args.name}-a.txt, /tmp/ab-{args.name}-b.txt')
