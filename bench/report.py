"""The printed summary and the PNG plot of a flash-sale run."""

from __future__ import annotations

import argparse
import math
import os
import resource
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench._common import Recorder, percentile
from bench.floor import busy_share

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


# The machine's side of a ticket: the processes that serve the sale.
MACHINE = ("web", "worker", "postgres", "redis")


def questions(people: list[Any]) -> dict[str, float]:
    """The pages' authenticated requests: per waiting customer between the
    draw and admission (socket tickets, the number again, a token question
    answered WAITING), per admitted customer for the token, and the
    questions sent over the socket instead."""
    waiting = [c for c in people if c.number is not None and c.behaviour != "abandon_queue"]
    admitted = [c for c in waiting if c.admission_token]
    n, m = max(1, len(waiting)), max(1, len(admitted))
    return {
        "waiting_customers": len(waiting),
        "admitted_customers": len(admitted),
        "per_waiting": sum(c.questions for c in waiting) / n,
        "token_per_admitted": sum(c.token_questions for c in admitted) / m,
        "socket_per_waiting": sum(c.socket_questions for c in waiting) / n,
        "numbers_from_draw": sum(1 for c in waiting if c.from_draw),
    }


def floor_lines(measured: dict[str, float], floor: Any) -> tuple[list[str], dict]:
    """Times to 95 % and 100 % sold beside the protocol floor's, and the ratios."""
    lines, figures = [], {}
    for share, label in ((0.95, "95% sold"), (1.0, "sold out")):
        shown = "100% sold" if share == 1.0 else label
        at, low = measured.get(label), floor.time_to(share)
        ratio = at / low if at is not None and low else None
        figures[shown] = {"measured": at, "floor": low, "ratio": ratio}
        lines.append(
            f"  {shown:<10} measured {'not reached' if at is None else f'{at:7.1f} s'}"
            f"   floor {'not reached' if low is None else f'{low:7.1f} s'}"
            + (f"   ratio {ratio:.2f}" if ratio is not None else "")
        )
    return lines, figures


def plot_sold(path: Path, monitor: Any, floor: Any, *, title: str) -> None:
    """Tickets sold over time, measured against the protocol floor's curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    opened = monitor.marks.get("sale start", 0.0)
    fig, ax = plt.subplots(figsize=(10, 5))
    t = [p["t"] - opened for p in monitor.timeline]
    ax.plot(t, [p["sold"] for p in monitor.timeline], label="sold (measured)", color="tab:green")
    ft = [0.0] + [x for x, _ in floor.sold]
    fn = [0] + [n for _, n in floor.sold]
    ax.step(ft, fn, where="post", label="sold at the protocol floor (zero CPU)", color="tab:grey")
    goal = 0.95 * floor.rules.inventory
    ax.axhline(goal, color="tab:red", linestyle=":", linewidth=0.8, label="95 % of the tickets")
    low = floor.time_to(0.95)
    if low is not None:
        ax.axvline(1.5 * low, color="tab:orange", linestyle="--", linewidth=0.8,
                   label="1.5 x the floor's 95 %")  # fmt: skip
    ax.set_xlim(left=0, right=max([*t, ft[-1], 1.0]))
    ax.set_xlabel("seconds since the sale started")
    ax.set_ylabel("tickets sold")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def print_results(
    args: argparse.Namespace,
    result: dict,
    checks: list,
    counts: dict,
    settle: float,
    env: dict,
    floor: Any = None,
) -> dict:
    rec, monitor = result["rec"], result["monitor"]
    summary = rec.summary()
    print("\n=== flash sale results ===")
    loads = [p["load"] for p in monitor.timeline if "load" in p]
    if loads:
        print(
            f"load average (1 min) during the sale: min {min(loads):.1f}, "
            f"mean {sum(loads) / len(loads):.1f}, max {max(loads):.1f} (2 cores)"
        )
    print(
        f"customers {args.customers:,} (WebSocket {min(args.ws_customers, args.customers):,}), "
        f"tickets {result['inventory']:,}, batch {args.batch_size}, "
        f"time to choose {args.window_seconds} s, "
        f"in flight: {args.concurrency} joins, {args.poll_concurrency} reads and questions, "
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
    since_start = {
        label: marks[label] - marks["sale start"]
        for label in ("95% sold", "sold out")
        if "sale start" in marks and label in marks
    }
    floor_figures: dict = {}
    if floor is not None:
        lines, floor_figures = floor_lines(since_start, floor)
        print(
            "\nagainst the protocol floor (the same customers and rules at zero CPU; first"
            f" tick {floor.rules.tick_phase:.1f} s after the start, as the beat ran it):"
        )
        print("\n".join(lines))
    asked = questions(result["people"])
    print(
        f"\nauthenticated requests of the pages: {asked['per_waiting']:.2f} per waiting customer"
        f" between the draw and admission ({asked['waiting_customers']:,} waiting),"
        f" + {asked['token_per_admitted']:.2f} for the token per admitted"
        f" ({asked['admitted_customers']:,}); over the socket instead:"
        f" {asked['socket_per_waiting']:.2f} per waiting customer"
    )
    sale = result["sale"]
    print(f"line-state reads by the pages: {sale.state_reads:,}")
    print(
        f"draw-document reads by the pages: {sale.draw_reads:,}"
        f" ({asked['numbers_from_draw']:,} numbers learnt from the draw's documents)"
    )
    print(
        f"  invariants all held     {settle:8.1f} s after the stop (settled, Redis rebuilt)"
        if settle >= 0
        else "  invariants NOT all held (see below)"
    )
    sale = result["sale"]
    print("\nadmission to client (admitted_at of the tick -> client received):")
    print(f"  WebSocket push   {latency_line(result['push_latency'])}")
    print(f"  token question   {latency_line(result['poll_latency'])}")
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
    busy = busy_share(monitor.timeline, monitor.marks.get("95% sold"))
    if busy is not None:
        print(
            f"machine busy until {'95% sold' if '95% sold' in monitor.marks else 'the stop'}:"
            f" {100 * busy[0]:.0f} % of {os.cpu_count()} cores over {busy[1]:.0f} s"
            " (the stack and the load generator)"
        )
    per_ticket = None
    if cpu:
        sold = max(1, monitor.timeline[-1]["sold"] if monitor.timeline else 1)
        print(
            "CPU seconds during the sale (per ticket sold, ms): "
            + ", ".join(f"{k} {v:.0f} ({1000 * v / sold:.0f})" for k, v in cpu.items())
        )
        per_ticket = 1000 * sum(cpu.get(k, 0.0) for k in MACHINE) / sold
        print(
            f"machine CPU per ticket sold ({' + '.join(MACHINE)}, the whole sale, waiting"
            f" crowd included): {per_ticket:.0f} ms"
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
        "from_sale_start_seconds": {k: round(v, 1) for k, v in since_start.items()},
        "floor": floor_figures,
        "questions": asked,
        "line_state_reads": sale.state_reads,
        "draw_reads": sale.draw_reads,
        "load_average": [min(loads), sum(loads) / len(loads), max(loads)] if loads else None,
        "machine_cpu_ms_per_ticket": per_ticket,
        "machine_busy_share": busy[0] if busy is not None else None,
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
