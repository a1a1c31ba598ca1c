#!/usr/bin/python3
"""Run every PromQL expression of colmet's dashboards and alert rules
(contrib/grafana/*.json, contrib/vmalert/*.yml) against a VictoriaMetrics
that holds a test job.

usage: check_queries.py CONTRIB_DIR VM_URL JOB_ID CLUSTER TIME_S [REQUIRED]

Dashboard variables are set as Grafana would for that job: $job_id, $cluster,
$__rate_interval = 1m. An alert rule's final comparison with a number gets
`bool`, so that the expression returns its series whether or not the alert
would fire. Each expression must be accepted and return data, except where
its panel's description starts with "Needs hardware:" or its rule has a
"needs" annotation (data only some nodes or jobs have): those must only be
accepted, unless their name matches the regular expression REQUIRED (the
test job has that hardware, or its test double). Prints one line per
expression; exits 1 on a failure.
"""
import glob
import json
import os
import re
import sys
import urllib.parse
import urllib.request

import yaml


def dashboard_queries(path):
    with open(path) as f:
        d = json.load(f)
    for p in d["panels"]:
        optional = p.get("description", "").startswith("Needs hardware:")
        for t in p.get("targets", []):
            yield f"{os.path.basename(path)}: {p['title']} [{t['refId']}]", t["expr"], optional


def rule_queries(path):
    with open(path) as f:
        d = yaml.safe_load(f)
    for g in d["groups"]:
        for r in g["rules"]:
            expr = re.sub(r"\s*(<=|>=|<|>|==|!=)\s*([-+0-9.e]+)\s*$", r" \1 bool \2", r["expr"].strip())
            yield f"{os.path.basename(path)}: {r.get('alert', r.get('record'))}", expr, "needs" in r.get("annotations", {})


def main():
    contrib, url, job_id, cluster, at = sys.argv[1:6]
    required = re.compile(sys.argv[6]) if len(sys.argv) > 6 else None
    queries = []
    for path in sorted(glob.glob(os.path.join(contrib, "grafana", "*.json"))):
        queries += dashboard_queries(path)
    for path in sorted(glob.glob(os.path.join(contrib, "vmalert", "*.yml"))):
        queries += rule_queries(path)
    failed = 0
    for name, expr, optional in queries:
        q = expr.replace("$job_id", job_id).replace("$cluster", cluster).replace("$__rate_interval", "1m")
        query = urllib.parse.urlencode({"query": q, "time": at})
        try:
            with urllib.request.urlopen(url + "/api/v1/query?" + query) as answer:
                result = json.load(answer)
        except urllib.error.HTTPError as e:
            print(f"FAIL {name}: HTTP {e.code} {e.read().decode()[:200]}\n     {q}")
            failed += 1
            continue
        n = len(result["data"]["result"])
        optional = optional and not (required and required.search(name))
        ok = result["status"] == "success" and (n > 0 or optional)
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {n} series{' (optional)' if optional and n == 0 else ''}"
              + ("" if ok else f"\n     {q}"))
    print(f"{len(queries)} expressions, {failed} failed")
    sys.exit(1 if failed or not queries else 0)


if __name__ == "__main__":
    main()
