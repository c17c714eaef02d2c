#!/usr/bin/env python3
"""A long real-time run of one server, then its restart timed (issue 19's 1 h state).

Starts the server command on an empty directory, runs `cairn bench run` against it
(1,000 targets, the default alert rules and 1 h dashboards), then reports the data
directory's bytes per sample while running, the median RSS of the run's last 10 minutes
(steady RSS), and, after a graceful stop, the time from start until
`sum(count_over_time(node_cpu_seconds_total[65m]))` at the run's end answers what it
answered before the stop. Run one server after the other, never both at once:

  scripts/bench_realtime_hour.py vm 60m -- ../shared/peers/victoria-metrics-1.150.0 \
      -storageDataPath={data} -httpListenAddr=127.0.0.1:{port} -retentionPeriod=100y
  scripts/bench_realtime_hour.py cairn 60m -- target/release/cairn \
      --storage.path {data} --http.listen-addr 127.0.0.1:{port}

The restart is timed RESTARTS times (environment, default 3) on the same directory and
reported as their median and each; KEEP=1 keeps the directory, and RESTART_ONLY=1 times
only the restarts of a directory kept earlier (reading the query's instant and answer
from /tmp/h1-NAME.restart.json), for timing both servers again on a quiet machine.
PORT (default 9320) lets two runs share the machine, e.g. for the disk and RSS figures
with RESTARTS=0, timing the restarts afterwards with RESTART_ONLY=1.

Writes /tmp/h1-NAME.json (the bench report) and /tmp/h1-NAME.restart.json (the rest).
"""
import json, os, signal, statistics, subprocess, sys, time, urllib.parse, urllib.request

name, duration = sys.argv[1], sys.argv[2]
cmd_tmpl = sys.argv[sys.argv.index('--') + 1:]
data = f'/tmp/h1-{name}'
port = int(os.environ.get('PORT', '9320'))
restarts = int(os.environ.get('RESTARTS', '3'))
restart_only = os.environ.get('RESTART_ONLY') == '1'
if not restart_only:
    subprocess.run(['rm', '-rf', data]); os.makedirs(data)
cmd = [c.format(data=data, port=port) for c in cmd_tmpl]
log = open(f'/tmp/h1-{name}.server.log', 'w')
def start():
    return subprocess.Popen(cmd, stdout=log, stderr=log)
def q(query, t):
    url = f'http://127.0.0.1:{port}/api/v1/query?' + urllib.parse.urlencode({'query': query, 'time': t})
    with urllib.request.urlopen(url, timeout=60) as r:
        d = json.load(r)
    res = d['data']['result']
    return res[0]['value'][1] if res else None
def up(t0, timeout=900):
    while time.time() - t0 < timeout:
        try:
            urllib.request.urlopen(f'http://127.0.0.1:{port}/api/v1/query?query=1', timeout=5).read()
            return time.time() - t0
        except Exception:
            time.sleep(0.05)
query = 'sum(count_over_time(node_cpu_seconds_total[65m]))'
def time_restart(t, before):
    t0 = time.time(); srv = start()
    http_s = up(t0)
    restart_s = None
    while time.time() - t0 < 900:
        try:
            if q(query, t) == before:
                restart_s = time.time() - t0; break
        except Exception:
            pass
        time.sleep(0.05)
    time.sleep(5)
    rss_after = int(open(f'/proc/{srv.pid}/status').read().split('VmRSS:')[1].split()[0]) * 1024
    srv.send_signal(signal.SIGTERM); srv.wait()
    return dict(http_s=http_s, restart_s=restart_s, rss_after_restart=rss_after)
if restart_only:
    out = json.load(open(f'/tmp/h1-{name}.restart.json'))
    t, before = out['query_time'], out['check']
else:
    srv = start()
    up(time.time())
    bench = [os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'target', 'release', 'cairn'), 'bench', 'run',
             '--write-url', f'http://127.0.0.1:{port}/api/v1/write', '--query-url', f'http://127.0.0.1:{port}',
             '--pid', str(srv.pid), '--data-dir', data, '--targets', '1000', '--duration', duration,
             '--range-queries', '1h', '--quiet', '--report-json', f'/tmp/h1-{name}.json']
    subprocess.run(bench, stdout=open(f'/tmp/h1-{name}.bench.log', 'w'), stderr=subprocess.STDOUT)
    rep = json.load(open(f'/tmp/h1-{name}.json'))
    tl = rep['timeline']
    end_s = tl[-1]['t_s']
    last10 = [x['target_rss_bytes'] for x in tl if x['t_s'] > end_s - 600]
    steady = statistics.median(last10)
    t = rep['workload']['data_end_ms'] / 1000
    time.sleep(35)  # past VictoriaMetrics' -search.latencyOffset (30 s)
    before = q(query, t)
    du = int(subprocess.run(['du', '-sb', data], capture_output=True, text=True).stdout.split()[0])
    t0 = time.time(); srv.send_signal(signal.SIGTERM); srv.wait(); stop_s = time.time() - t0
    du_stopped = int(subprocess.run(['du', '-sb', data], capture_output=True, text=True).stdout.split()[0])
    out = dict(name=name, samples=rep['samples_delivered'], disk_running=du, disk_stopped=du_stopped,
               b_per_sample=du / rep['samples_delivered'], b_per_sample_stopped=du_stopped / rep['samples_delivered'],
               steady_rss_last10=steady, rss_peak=rep['target']['rss_peak_bytes'], stop_s=stop_s,
               check=before, query_time=t)
runs = [time_restart(t, before) for _ in range(restarts)]
out['restarts'] = runs
if runs:
    out['restart_s'] = statistics.median(r['restart_s'] for r in runs if r['restart_s'] is not None)
    out['http_s'] = statistics.median(r['http_s'] for r in runs)
print(json.dumps(out))
json.dump(out, open(f'/tmp/h1-{name}.restart.json', 'w'))
if os.environ.get('KEEP') != '1':
    subprocess.run(['rm', '-rf', data])
