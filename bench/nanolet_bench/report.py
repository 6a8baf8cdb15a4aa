"""The results as one markdown table (printed, and kept in the raw file)."""


def fmt_ratio(x):
    return "—" if x is None else f"{x:.2f}×"


def mib(kib):
    return kib / 1024


def mem_cells(m):
    """The two memory columns of a row: the agent's RSS / PSS / anonymous,
    and the sum over its container monitors (count, and which executables)."""
    if not m:
        return "", ""
    a, mo = m["agent"], m["monitors"]
    ag = f"{mib(a['rss']):.2f} / {mib(a['pss']):.2f} / {mib(a['anon']):.2f}"
    if not mo["count"]:
        return ag, "0"
    who = ",".join(sorted(mo.get("comms", {})))
    return ag, (f"{mo['count']} {who}: {mib(mo['rss']):.1f} / {mib(mo['pss']):.1f} / "
                f"{mib(mo['anon']):.1f}")


def verdict(x, goal):
    return "met" if x <= goal else f"missed by {(x / goal - 1) * 100:.0f}%"


class Table:
    """One markdown table: a row per figure, blank cells where a column has
    nothing to say."""

    def __init__(self):
        self.lines = ["| measure | median | min | max | ratio | × same-config floor | goal | verdict "
                      "| agent RSS / PSS / anon MiB | monitors: n, RSS / PSS / anon MiB |",
                      "|---|---|---|---|---|---|---|---|---|---|"]

    def row(self, label, median="", mn="", mx="", rt="", goal="", v="", m=None, same=""):
        ag, mo = mem_cells(m)
        self.lines.append(f"| {label} | {median} | {mn} | {mx} | {rt} | {same} | {goal} | {v} "
                          f"| {ag} | {mo} |")


def ratio(a, b):
    return None if a is None or b in (None, 0) else a / b


def latency_rows(t, res):
    L = res["latency"]
    LM = res.get("latency_mem", {})

    def med(c):
        return L[c]["median_ms"] if c in L else None

    def same_config(col, same_ref):
        """nanolet ÷ runc alone with nanolet's own config.json: the agent's
        own share, as a ratio and in ms."""
        r = ratio(med(col), med(same_ref)) if same_ref else None
        return "" if r is None else f"{fmt_ratio(r)} (agent's own {med(col) - med(same_ref):.1f} ms)"

    def lat_row(label, col, ref, goal_ratio=None, ref_label="floor", m=None, same_ref=None):
        if col not in L:
            return
        r = ratio(med(col), med(ref))
        g = v = ""
        if goal_ratio is not None and r is not None:
            g = f"≤ {goal_ratio}× {ref_label}"
            v = verdict(r, goal_ratio)
        t.row(label, f"{L[col]['median_ms']:.1f} ms", f"{L[col]['min_ms']:.1f}",
              f"{L[col]['max_ms']:.1f}", f"{fmt_ratio(r)} {ref_label if r else ''}", g, v, m,
              same_config(col, same_ref))

    lat_row("runc create+start (floor, host net)", "floor_host", "floor_host")
    lat_row("runc create+start, nanolet's config.json (same-config floor, host net)",
            "floor_pod_host", "floor_host")
    lat_row("nanolet hostNetwork pod", "nanolet_host", "floor_host", 1.3, m=LM.get("host"),
            same_ref="floor_pod_host")
    lat_row("nanolet hostNetwork pod vs podman", "nanolet_host", "podman_host", 0.2, "podman")
    lat_row("podman kube play, hostNetwork", "podman_host", "floor_host")
    lat_row("netns + CNI ADD + runc (floor, CNI)", "floor_cni", "floor_cni")
    lat_row("netns + CNI ADD + runc, nanolet's config.json (same-config floor, CNI)",
            "floor_pod_cni", "floor_cni", None, "CNI floor")
    lat_row("nanolet CNI bridge pod", "nanolet_cni", "floor_cni", 1.3, "CNI floor", m=LM.get("cni"),
            same_ref="floor_pod_cni")
    lat_row("nanolet CNI bridge pod vs podman", "nanolet_cni", "podman_cni", 0.2, "podman")
    lat_row("podman kube play, bridge network", "podman_cni", "floor_cni", None, "CNI floor")


def scale_rows(t, res, floor, cores):
    z = res.get("agent_0_pods")
    if z:
        m = z.get("mem_kib")
        rss = z["rss_kib"] / 1024
        t.row("agent, 0 pods", f"{rss:.2f} MiB RSS", "", "", f"{rss / 4:.2f}× goal", "≤ 4 MiB RSS",
              verdict(rss, 4), {"agent": m, "monitors": {"count": 0}} if m else None)
    s = res.get("scale")
    if s:
        n = s["pods"]
        m = s.get("mem_idle")
        if floor:
            fl = n * floor / cores
            r = s["all_running_ms"] / fl
            t.row(f"{n} pods dropped at once → all running", f"{s['all_running_ms']:.0f} ms", "", "",
                  f"{r:.2f}× ({n}×floor÷{cores} cores = {fl:.0f} ms)", "≤ 1.5×", verdict(r, 1.5))
            if "median_running_ms" in s:
                t.row(f"{n} pods dropped at once → each pod running (median)", f"{s['median_running_ms']:.0f} ms")
        t.row(f"agent CPU while starting {n} pods", f"{s['agent_cpu_s_while_starting']:.2f} s")
        if "machine_busy_cpu_s_while_starting" in s:
            t.row(f"machine CPU while starting {n} pods (all processes)",
                  f"{s['machine_busy_cpu_s_while_starting']:.2f} s")
        t.row(f"agent RSS peak while starting {n} pods", f"{mib(s['agent_rss_peak_kib_while_starting']):.2f} MiB")
        cpu = s["agent_cpu_percent_idle"]
        t.row(f"agent CPU, {n} pods idle {s['idle_seconds']} s", f"{cpu:.3f} % of a core", "", "",
              f"{cpu / 0.5:.2f}× goal", "≤ 0.5 %", verdict(cpu, 0.5))
        if m:
            am, cm = m["agent"], m["monitors"]
            k = max(1, cm["count"])
            t.row(f"agent, {n} pods idle", f"{mib(am['rss']):.2f} MiB RSS", "", "",
                  f"{mib(am['rss']) / 16:.2f}× goal", "≤ 16 MiB RSS (100 pods)",
                  verdict(mib(am["rss"]), 16 * n / 100), m)
            each = mib(cm["pss"]) / k
            t.row(f"monitor PSS each, {cm['count']} of them", f"{each:.3f} MiB", "", "",
                  f"{each / 0.25:.2f}× goal", "≤ 0.25 MiB PSS", verdict(each, 0.25), m)
            tot = mib(am["pss"] + cm["pss"])
            t.row(f"agent + monitors PSS, {n} pods", f"{tot:.1f} MiB", "", "", "",
                  f"≤ {40 * n / 100:.0f} MiB", verdict(tot, 40 * n / 100), m)


def parfloor_rows(t, res, floor, cores):
    s = res.get("scale")
    pf = res.get("parfloor")
    if pf and floor:
        # Beside the scale rows (or alone with SKIP_SCALE=1): the measured floor.
        n = res["config"]["SCALE_PODS"]
        fl = n * floor / cores
        labels = {"bare": "the floor's bare bundle", "pod": "nanolet's config.json",
                  "pod-noseccomp": "nanolet's config.json without seccomp"}
        nano = pf["variants"].get("nanolet/agent", {}).get("median_ms") or (s or {}).get("all_running_ms")
        for k, v in pf["variants"].items():
            kind, bound = k.split("/")
            runs = [x["all_running_ms"] for x in v["runs"]]
            if kind == "nanolet":
                t.row(f"nanolet, {n} pods at once, in the measured floor's rounds",
                      f"{v['median_ms']:.0f} ms", f"{min(runs):.0f}", f"{max(runs):.0f}",
                      f"{v['median_ms'] / fl:.2f}× issue floor; machine CPU {v['median_cpu_s']:.2f} s")
                continue
            par = f"{bound} at once" if bound == "unbounded" else f"{bound} at a time"
            vs = f"nanolet {nano / v['median_ms']:.2f}× this; " if nano else ""
            t.row(f"measured floor: {n} × runc create+start, {labels[kind]}, {par}",
                  f"{v['median_ms']:.0f} ms", f"{min(runs):.0f}", f"{max(runs):.0f}",
                  f"{v['median_ms'] / fl:.2f}× issue floor; {vs}machine CPU {v['median_cpu_s']:.2f} s")


def restart_coldstart_kubeadm_rows(t, res, floor, cores):
    rs = res.get("restart")
    if rs:
        conv = f"{rs['converged_ms']:.0f} ms" if rs["converged_ms"] is not None else f"not within {rs['converged_within_s']} s"
        v = (verdict(rs["converged_ms"], 500) if rs["converged_ms"] is not None else "missed") + \
            f", restarted {rs['containers_restarted']} of {rs['pods']}"
        t.row(f"agent kill -9 + restart, {rs['pods']} pods → all adopted", conv, "", "", "",
              "≤ 500 ms, 0 restarted", v, rs.get("mem_after"))
    cs = res.get("coldstart")
    if cs:
        n = cs["pods"]
        fl = n * floor / cores if floor else None
        t.row(f"cold start after a simulated reboot, {n} pods → all running", f"{cs['all_running_ms']:.0f} ms",
              f"{cs['first_running_ms']:.0f} (first)", "",
              f"{cs['all_running_ms'] / fl:.2f}× ({n}×floor÷{cores} = {fl:.0f} ms)" if fl else "", "", "",
              cs.get("mem"))
    if res.get("coldstart_error"):
        t.row("cold start after a simulated reboot", f"failed: {res['coldstart_error']}")
    ku = res.get("kubeadm")
    if ku and "skipped" not in ku:
        t.row("kubeadm control plane: 4 manifests → all Running", f"{ku['all_running_ms']:.0f} ms" if ku["all_running_ms"] else "")
        t.row("kubeadm control plane: 4 manifests → all Ready", f"{ku['all_ready_ms']:.0f} ms", "", "",
              "startupProbe initialDelaySeconds 10 s", "", "", ku.get("mem"))
    elif ku:
        t.row("kubeadm control plane", f"skipped: {ku['skipped']}")


def sweep_rescan_rows(t, res, floor, cores):
    sw = res.get("sweep")
    if sw:
        for v, r in sw.items():
            t.row(f"{res['config']['SCALE_PODS']} pods at once, --runtime-max-parallel={v}",
                  f"{r['median_ms']:.0f} ms", f"{min(x['all_running_ms'] for x in r['runs']):.0f}",
                  f"{max(x['all_running_ms'] for x in r['runs']):.0f}",
                  f"{r['median_ms'] / (res['config']['SCALE_PODS'] * floor / cores):.2f}×" if floor else "")
    rc = res.get("rescan")
    if rc:
        n = res["config"]["RESCAN_MANIFESTS"]
        for key, label in (("first_scan", "first scan (parse all)"),
                           ("rescan_unchanged", "periodic rescan, nothing changed"),
                           ("rescan_all_touched", "rescan, every file touched (re-parse)")):
            v = rc[key]
            ins = rc.get("callgrind_instructions_" + key.replace("rescan_all_", "rescan_"))
            extra = f"{ins / 1e6:.1f} M instr (callgrind)" if ins else ""
            g = vv = ""
            if key == "rescan_unchanged":
                g, vv = "≤ 2 ms CPU", verdict(v["cpu_ms_median"], 2)
            t.row(f"{label}, {n} manifests", f"{v['cpu_ms_median']:.1f} ms CPU", f"{v['cpu_ms_min']:.1f}",
                  f"{v['cpu_ms_max']:.1f}", extra, g, vv)


def report(res, path):
    t = Table()
    latency_rows(t, res)
    cores = res["machine"]["nproc"]
    floor = res["latency"].get("floor_host", {}).get("median_ms")
    scale_rows(t, res, floor, cores)
    parfloor_rows(t, res, floor, cores)
    restart_coldstart_kubeadm_rows(t, res, floor, cores)
    sweep_rescan_rows(t, res, floor, cores)
    table = "\n".join(t.lines)
    print(table)
    print(f"\nraw results: {path}")
    return table
