"""The printed summary and the PNG plot of a flash-sale run."""

from __future__ import annotations

import argparse
import math
import resource
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench._common import Recorder, percentile

# Endpoints shown in the latency panel (the others are in the table).
LATENCY_PLOT = ("join", "position", "claim", "payment_create", "claim_get")


def endpoint_table(summary: dict[str, dict]) -> str:
    lines = [
        f"  {'endpoint':<16}{'requests':>10}{'ok':>9}{'req/s':>9}"
        f"{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}"
    ]
    for endpoint, s in summary.items():
        lines.append(
            f"  {endpoint:<16}{s['count']:>10,}{s['ok']:>9,}{s['per_second']:>9.0f}"
            f"{s['p50_ms']:>9.1f}{s['p95_ms']:>9.1f}{s['p99_ms']:>9.1f}{s['max_ms']:>9.0f}"
        )
    return "\n".join(lines)


def error_table(rec: Recorder) -> str:
    if not rec.errors:
        return "  none"
    rows = sorted(rec.errors.items(), key=lambda kv: (-kv[1], kv[0]))
    return "\n".join(
        f"  {endpoint:<16}{status:>5}  {code:<28}{n:>8,}" for (endpoint, status, code), n in rows
    )


def latency_line(values: list[float]) -> str:
    if not values:
        return "n/a"
    values = sorted(values)
    return (
        f"n={len(values):,} p50 {percentile(values, 50) * 1000:.0f} ms, "
        f"p99 {percentile(values, 99) * 1000:.0f} ms, max {values[-1] * 1000:.0f} ms"
    )


def _bins(
    rec: Recorder, width: float
) -> tuple[list[float], dict[str, list[float]], dict[str, list]]:
    end = max((s.t for v in rec.samples.values() for s in v), default=0.0)
    n = int(end // width) + 1
    counts: dict[str, list[float]] = defaultdict(lambda: [0.0] * n)
    lats: dict[str, list[list[float]]] = defaultdict(lambda: [[] for _ in range(n)])
    for endpoint, samples in rec.samples.items():
        for s in samples:
            i = int(s.t // width)
            counts[endpoint][i] += 1 / width
            lats[endpoint][i].append(s.latency * 1000)
    return [i * width for i in range(n)], counts, lats


def plot(
    path: Path,
    rec: Recorder,
    timeline: list[dict[str, Any]],
    faults: list[Any],
    *,
    title: str,
    marks: dict[str, float] | None = None,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_rate, ax_lat, ax_q) = plt.subplots(3, 1, figsize=(12, 11), sharex=True)
    xs, counts, _ = _bins(rec, 1.0)
    for endpoint in sorted(counts, key=lambda e: -sum(counts[e])):
        ax_rate.plot(xs, counts[endpoint], label=endpoint, linewidth=1)
    ax_rate.set_ylabel("requests / s")
    ax_rate.legend(loc="upper right", fontsize=8, ncol=3)
    ax_rate.set_title(title)

    xs2, _, lats2 = _bins(rec, 2.0)
    for endpoint in LATENCY_PLOT:
        if endpoint not in lats2:
            continue
        p99 = [percentile(sorted(b), 99) if b else math.nan for b in lats2[endpoint]]
        p50 = [percentile(sorted(b), 50) if b else math.nan for b in lats2[endpoint]]
        (line,) = ax_lat.plot(xs2, p99, label=f"{endpoint} p99", linewidth=1)
        ax_lat.plot(xs2, p50, linestyle=":", color=line.get_color(), linewidth=1)
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("latency ms (p99 solid, p50 dotted)")
    ax_lat.legend(loc="upper right", fontsize=8, ncol=3)

    if timeline:
        t = [p["t"] for p in timeline]
        ax_q.plot(t, [p["waiting"] for p in timeline], label="waiting in queue", color="tab:blue")
        ax_q.set_ylabel("customers waiting")
        ax_sold = ax_q.twinx()
        ax_sold.plot(
            t, [p["sold"] for p in timeline], label="tickets sold (paid)", color="tab:green"
        )
        ax_sold.plot(
            t,
            [p["held"] for p in timeline],
            label="tickets held (claimed + paid)",
            color="tab:olive",
            linestyle="--",
        )
        ax_sold.plot(
            t,
            [p["admitted"] for p in timeline],
            label="admitted, not yet claimed",
            color="tab:orange",
            linewidth=1,
        )
        ax_sold.set_ylabel("tickets / customers")
        handles = ax_q.get_legend_handles_labels()[0] + ax_sold.get_legend_handles_labels()[0]
        ax_q.legend(handles=handles, loc="center right", fontsize=8)
    ax_q.set_xlabel("seconds since the sale started")

    for fault in faults:
        for ax in (ax_rate, ax_lat, ax_q):
            ax.axvspan(
                fault.injected_at,
                max(fault.ended_at, fault.injected_at + 0.5),
                color="red",
                alpha=0.15,
            )
        ax_rate.annotate(
            fault.name, (fault.injected_at, ax_rate.get_ylim()[1] * 0.9), fontsize=8, color="red"
        )
    for label, when in (marks or {}).items():
        for ax in (ax_rate, ax_lat, ax_q):
            ax.axvline(when, color="grey", linestyle="--", linewidth=0.8)
        ax_q.annotate(label, (when, 0), fontsize=8, color="grey", rotation=90, va="bottom")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def print_results(
    args: argparse.Namespace, result: dict, checks: list, counts: dict, settle: float, env: dict
) -> dict:
    rec, sale, monitor = result["rec"], result["sale"], result["monitor"]
    summary = rec.summary()
    print("\n=== flash sale results ===")
    print(
        f"customers {args.customers:,} (WebSocket {min(args.ws_customers, args.customers):,}), "
        f"tickets {result['inventory']:,}, batch {args.batch_size}, "
        f"window {args.window_seconds} s, "
        f"in flight: {args.concurrency} joins, {args.poll_concurrency} polls, "
        f"{args.purchase_concurrency} purchase requests"
    )
    settings = {
        k: env[k]
        for k in sorted(env)
        if k.endswith(("_SECONDS", "WEB_CONCURRENCY", "WEB_THREADS")) or k == "DJANGO_DEBUG"
    }
    if getattr(args, "gateway_latency", 0):
        settings["gateway latency (s)"] = str(args.gateway_latency)
    if settings:
        print("stack settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
    print("\nper endpoint (whole run):")
    print(endpoint_table(summary))
    print("\nerrors by endpoint, status and code:")
    print(error_table(rec))
    marks = monitor.marks
    print("\ntimes (seconds since the first customer arrived):")
    joins = rec.samples.get("join", [])
    if joins:
        print(f"  all joins answered      {max(s.t + s.latency for s in joins):8.1f}")
    for label in ("all held", "sold out"):
        print(
            f"  {label:<23} {marks[label]:8.1f}"
            if label in marks
            else f"  {label:<23}      not reached"
        )
    print(f"  sale stopped            {result['ended_at']:8.1f}")
    if "sale start" in marks:
        opened = marks["sale start"]
        print(f"\ntimes from the sale start ({opened:.1f} s after the first arrival):")
        for label in ("95% sold", "sold out"):
            shown = "100% sold" if label == "sold out" else label
            print(
                f"  {shown:<23} {marks[label] - opened:8.1f}"
                if label in marks
                else f"  {shown:<23}      not reached"
            )
    print(
        f"  invariants all held     {settle:8.1f} s after the stop (settled, Redis rebuilt)"
        if settle >= 0
        else "  invariants NOT all held (see below)"
    )
    print("\nadmission to client (admitted_at of the tick -> client received):")
    print(f"  WebSocket push   {latency_line(result['push_latency'])}")
    print(f"  position poll    {latency_line(result['poll_latency'])}")
    print(
        "  pay at gateway -> claim CONFIRMED in Postgres " + latency_line(result["confirm_latency"])
    )
    print(f"  pay at gateway -> client sees CONFIRMED     {latency_line(sale.confirm_latency)}")
    print(f"\nWebSocket messages received: {dict(sale.ws_messages)}")
    via = {k: v for k, v in sale.counts.items() if k.startswith("admitted_via_")}
    print(f"admission learnt by: {via}")
    outcomes = {k.split(":", 1)[1]: v for k, v in sale.counts.items() if k.startswith("outcome:")}
    print(f"customer outcomes: {dict(sorted(outcomes.items(), key=lambda kv: -kv[1]))}")
    print(f"status counts: {counts}")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    client_cpu = usage.ru_utime + usage.ru_stime
    print(
        f"load generator CPU: {client_cpu:.0f} s over {result['ended_at']:.0f} s of sale "
        f"({client_cpu / max(result['ended_at'], 1):.2f} cores on average), "
        f"peak RSS {usage.ru_maxrss / 1024:.0f} MB"
    )
    cpu = monitor.cpu_seconds() if monitor.cpu_last else {}
    if cpu:
        sold = max(1, monitor.timeline[-1]["sold"] if monitor.timeline else 1)
        print(
            "CPU seconds during the sale (per ticket sold, ms): "
            + ", ".join(f"{k} {v:.0f} ({1000 * v / sold:.0f})" for k, v in cpu.items())
        )
    if monitor.peak_rss:
        print(
            "peak RSS MB: " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(monitor.peak_rss.items()))
        )
    for fault in result["faults"]:
        heal = fault.heal_seconds
        print(
            f"\nfault {fault.name}: injected at {fault.injected_at:.1f} s, "
            f"ended {fault.ended_at:.1f} s, "
            f"healed {'NOT' if heal is None else f'{heal:.1f} s'} after (components {fault.heal})"
        )
        for note in fault.notes:
            print(f"  - {note}")
        for violation in fault.violations:
            print(f"  - FAILED: {violation}")
    print("\ninvariants:")
    for check in checks:
        print(f"  [{'PASS' if check['ok'] else 'FAIL'}] {check['check']}: {check['detail']}")
    ok = all(c["ok"] for c in checks) and not any(f.violations for f in result["faults"])
    print(f"\nRESULT: {'all invariants hold' if ok else 'INVARIANT OR FAULT REQUIREMENT FAILED'}")
    return {
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "stack_settings": settings,
        "endpoints": summary,
        "errors": [
            {"endpoint": e, "status": s, "code": c, "count": n}
            for (e, s, c), n in rec.errors.items()
        ],
        "marks": marks,
        "from_sale_start_seconds": {
            label: round(marks[label] - marks["sale start"], 1)
            for label in ("95% sold", "sold out")
            if "sale start" in marks and label in marks
        },
        "ended_at": result["ended_at"],
        "settle_seconds": settle,
        "push_latency_ms": _pcts(result["push_latency"]),
        "poll_latency_ms": _pcts(result["poll_latency"]),
        "confirm_latency_ms": _pcts(result["confirm_latency"]),
        "confirm_seen_latency_ms": _pcts(sale.confirm_latency),
        "ws_messages": dict(sale.ws_messages),
        "outcomes": outcomes,
        "status_counts": counts,
        "peak_rss_mb": monitor.peak_rss,
        "cpu_seconds": cpu,
        "client_cpu_seconds": client_cpu,
        "faults": [
            {
                "name": f.name,
                "injected_at": f.injected_at,
                "ended_at": f.ended_at,
                "heal": f.heal,
                "heal_seconds": f.heal_seconds,
                "notes": f.notes,
                "violations": f.violations,
            }
            for f in result["faults"]
        ],
        "invariants": checks,
        "ok": ok,
    }


def _pcts(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    v = sorted(values)
    return {
        "n": len(v),
        "p50": percentile(v, 50) * 1000,
        "p99": percentile(v, 99) * 1000,
        "max": v[-1] * 1000,
    }
