"""Writes validation/*/scenario.toml: the suite's scenarios from one description, so the
machine, the TCG guest's costs and the check kinds stay the same in every file. Run it after
changing a scenario here (`python3 validation/tools/generate.py`); the recordings are then
redone with `validation/record.sh SCENARIO...`.

`generate.py OUT` writes into OUT/<scenario>/ instead (tests/python/test_validation_suite.py
checks that the committed files are what this writes)."""
import os, sys, textwrap
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# The suite's machines are built-in presets (crates/tiermem-core/presets/vm-*.toml), the
# machines validation/record.sh boots.
M2 = 'machine = "vm-2node"\n'
M3 = 'machine = "vm-3node"\n'
# The QEMU TCG guest's kernel CPU costs, measured from traced recordings
# (validation/*/kernel-trace: task_numa_work durations, promotion and demotion batches,
# ksmd's full scans, kdamond's samples; see docs/fidelity.md, costs). Software emulation
# runs kernel code 10-100x slower than hardware, and the NUMA scanner's 32x overhead cap
# makes that visible.
TCG_COSTS = """[kernel.costs]
numa_scan_pte = "50ns"
numa_pte_update = "550ns"
numa_hint_fault = "7us"
migrate_page = "47us"
reclaim_scan_page = "2us"
reclaim_unmap_page = "20us"
anon_fault = "20us"
alloc_slowpath = "20us"           # a fault's allocation below the low watermark (docs/fidelity.md, costs)
zero_page_fault = "11us"
task_wakeup = "200us"
"""
TCG_DAMON_COSTS = """[kernel.damon.costs]
sample_region_ns = 2500        # the guest's kdamond (traced): 5.26 ms + 2.5 us per region sampled a sample
sample_wakeup_ns = 250000
walk_page_ns = 90             # the guest's pageout walk (traced damos_before_apply gaps): 78-102 ns a page over the five 33 000-39 000-page regions walked fastest
"""
TCG_ZRAM_COST = 'compress_cost = "60us"\n'
# The runner loop's CPU time per access in the guest, set on every workload.
TCG_CPU_PER_ACCESS = 'cpu_per_access = "1us"            # the runner loop\'s CPU time per access in the guest (docs/fidelity.md, costs)\n'
TCG_KSM_COSTS = """[kernel.ksm.costs]
scan_page = "3us"
checksum = "20us"
compare = "1us"
merge = "15us"
cow_fault = "20us"
"""
def checks(*cs):
    """Each check a dict of keys; a "#" key is a comment written above the check."""
    out=[]
    for c in cs:
        if "#" in c:
            out.extend("# " + l for l in c["#"])
        out.append("[[validate.checks]]")
        for k,v in c.items():
            if k != "#":
                out.append(f"{k} = {v}")
    return "\n".join(out)+"\n"
def final(col): return {"what":'"final"',"column":f'"{col}"'}
def first(col): return {"what":'"first"',"column":f'"{col}"'}
def exact(col): return {"what":'"exact"',"column":f'"{col}"'}
def bursts(col): return {"what":'"bursts"',"column":f'"{col}"'}
def at(col, times): return {"what":'"at"',"column":f'"{col}"',"times":"["+", ".join(f'"{t}"' for t in times)+"]"}
scan={"what":'"scan_passes"',"workload":'"app"'}
def scenario(name, head, machine, kernel, workload, desc, cks, sample="250ms", duration="30s", setup=None):
    d=os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    kernel = kernel.strip()
    if "[kernel]" not in kernel:
        kernel = "[kernel]\n" + kernel
    # [kernel] keys first, then the cost tables, then the other sub-tables.
    head_k, sep, rest = kernel.partition("\n[kernel.")
    damon_costs = TCG_DAMON_COSTS if "[kernel.damon" in rest else ""
    kernel = head_k + "\n" + TCG_COSTS + damon_costs + (("[kernel." + rest) if sep else "")
    kernel = kernel.replace("[kernel.zram]\n", "[kernel.zram]\n" + TCG_ZRAM_COST)
    if "[kernel.ksm]" in kernel:
        kernel = kernel.rstrip() + "\n" + TCG_KSM_COSTS
    text=f"# {head}\nduration = \"{duration}\"\nseed = 1\n\n{machine}\n{kernel.strip()}\n\n[sim]\nsample_interval = \"{sample}\"\n\n{workload.strip()}\n\n[validate]\ndescription = \"{desc}\"\n{cks}"
    open(f"{d}/scenario.toml","w").write(text)
    if setup:
        open(f"{d}/setup.sh","w").write(setup); os.chmod(f"{d}/setup.sh",0o755)

def wl(regions, cpu_node=0, policy=None, threads=1, read_ratio=None):
    s='[[workloads]]\ntype = "synthetic"\n'+TCG_CPU_PER_ACCESS+'name = "app"\n'+f"cpu_node = {cpu_node}\n"
    if threads!=1: s+=f"threads = {threads}\n"
    if policy: s+=f"policy = {policy}\n"
    if read_ratio is not None: s+=f"read_ratio = {read_ratio}\n"
    for r in regions:
        s+="[[workloads.regions]]\n"
        for k,v in r.items(): s+=f"{k} = {v}\n"
    return s
bind1='{ mode = "bind", nodes = [1] }'
bind0='{ mode = "bind", nodes = [0] }'
def R(name,size,**kw):
    d={"name":f'"{name}"',"size":f'"{size}"'}
    for k,v in kw.items():
        if isinstance(v,bool): v = "true" if v else "false"
        elif isinstance(v,str) and not v.startswith("{"): v = f'"{v}"'
        d[k]= v
    return d
promo = [final("pgpromote_success"), final("numa_hint_faults"), final("numa_pte_updates"), first("pgpromote_success")]

# 1 default knobs, tiering
scenario("promote-default","A hot set on the slow node under NUMA balancing's tiering mode with the kernel's default knobs: the scan schedule and the promotion it drives.",M2,
 "[kernel]\nnuma_balancing = 2\ndemotion_enabled = true",
 wl([R("hot","64MiB",place=bind1,pattern="uniform",rate=200000),R("cold","64MiB",place=bind1)]),
 "default knobs: the first scan after the scan delay, then the hot set promoted on hint faults",
 checks(scan,*promo,exact("app.hot.N0"),exact("app.cold.N1")))
# 2 normal|tiering
scenario("promote-normal-tiering","NUMA_BALANCING_NORMAL | MEMORY_TIERING (3): top-tier pages are scanned too, and their hint faults feed the scan-period adaptation.",M2,
 "[kernel]\nnuma_balancing = 3\ndemotion_enabled = true",
 wl([R("local","64MiB",place=bind0,pattern="uniform",rate=100000),R("hot","64MiB",place=bind1,pattern="uniform",rate=100000)]),
 "mode 3: scan passes over both tiers, promotion of the slow node's hot set",
 checks(scan,*promo,final("numa_hint_faults_local"),exact("app.hot.N0")), duration="40s")
# 3 normal only
scenario("normal-mode","NUMA_BALANCING_NORMAL (1) alone on a tiered machine: no tiering branch; misplaced pages follow the task by the classic two-fault rule.",M2,
 "[kernel]\nnuma_balancing = 1",
 wl([R("remote","64MiB",place=bind1,pattern="uniform",rate=100000)]),
 "mode 1: what classic NUMA balancing does with pages on a CPU-less slow node",
 checks(scan,final("numa_pte_updates"),final("numa_hint_faults"),final("numa_pages_migrated"),final("pgpromote_success"),exact("app.remote.N0")), duration="40s")
# 4-6 rate limits
for mbps, dur in [(1,"60s"),(4,"40s"),(16,"30s")]:
    scenario(f"rate-limit-{mbps}mbps",f"The promotion rate limit at {mbps} MB/s: candidates beyond the limit in each 1 s window are not promoted.",M2,
     f"[kernel]\nnuma_balancing = 2\ndemotion_enabled = true\n[kernel.numa]\npromote_rate_limit_mbps = {mbps}",
     wl([R("hot","64MiB",place=bind1,pattern="uniform",rate=200000)]),
     f"rate limit {mbps} MB/s: promotion paced by the limit, bursts per scan",
     checks(scan,final("pgpromote_success"),final("pgpromote_candidate"),at("pgpromote_success",["10s","20s"]),bursts("pgpromote_success"),first("pgpromote_success")), duration=dur)
# 7 auto threshold
scenario("auto-threshold","Automatic hot-threshold adjustment: with a rate limit below the candidate rate, the threshold steps down each adjust period (scan_period_max_ms, 5 s here).",M2,
 "[kernel]\nnuma_balancing = 2\ndemotion_enabled = true\n[kernel.numa]\npromote_rate_limit_mbps = 2\nscan_period_max_ms = 5000",
 wl([R("hot","48MiB",place=bind1,pattern="uniform",rate=150000),R("warm","96MiB",place=bind1,pattern="uniform",rate=20000)]),
 "auto threshold: promotion of hot before warm pages as the threshold adapts",
 checks(scan,final("pgpromote_success"),final("pgpromote_candidate"),at("pgpromote_success",["15s","30s"]),final("app.hot.N0"),final("app.warm.N0")), duration="45s")
# 8 hot set larger than fast node's free memory
scenario("hot-exceeds-fast","A hot set larger than the fast node's free memory: promotion and kswapd demotion together until a steady state.",M2,
 "[kernel]\nnuma_balancing = 2\ndemotion_enabled = true",
 wl([R("filler","640MiB",place=bind0),R("hot","320MiB",place=bind1,pattern="uniform",rate=300000)]),
 "hot set > free fast memory: promotion plateau with demotion",
 checks(scan,final("pgpromote_success"),final("pgdemote_kswapd"),at("pgpromote_success",["20s"]),final("app.hot.N0"),final("app.filler.N1"),final("node0_free_pages")), duration="60s")
# 9 little free memory on the fast node
scenario("low-free-fast","The fast node nearly full of idle filler: promotion must wait for kswapd to make room above the promo watermark.",M2,
 "[kernel]\nnuma_balancing = 2\ndemotion_enabled = true",
 wl([R("filler","920MiB",place=bind0),R("hot","64MiB",place=bind1,pattern="uniform",rate=200000)]),
 "little free fast memory: when promotion starts and how much demotion it takes",
 checks(scan,first("pgpromote_success"),final("pgpromote_success"),final("pgdemote_kswapd"),first("pgdemote_kswapd"),final("app.hot.N0"),final("node0_free_pages")), duration="40s")
# 10 gaussian
scenario("gaussian","A Gaussian access pattern over a region on the slow node: only the pages near the centre are touched often enough to pass the hot threshold.",M2,
 "[kernel]\nnuma_balancing = 2\ndemotion_enabled = true\n[kernel.numa]\nhot_threshold_ms = 200",
 wl([R("data","128MiB",place=bind1,pattern="gaussian",sigma=0.1,rate=100000)]),
 "gaussian: the promoted share of the region",
 checks(scan,final("pgpromote_success"),final("numa_hint_faults"),final("app.data.N0"),at("app.data.N0",["15s"])), duration="40s")
# 11 hotcold
scenario("hotcold","A hot/cold pattern (10 % of the pages take 90 % of the accesses) on the slow node with a 500 ms hot threshold.",M2,
 "[kernel]\nnuma_balancing = 2\ndemotion_enabled = true\n[kernel.numa]\nhot_threshold_ms = 500",
 wl([R("data","128MiB",place=bind1,pattern="hotcold",hot_fraction=0.1,hot_share=0.9,rate=100000)]),
 "hot/cold: the promoted share of the region",
 checks(scan,final("pgpromote_success"),final("numa_hint_faults"),final("app.data.N0")), duration="40s")
# 12 wi task
scenario("wi-task","Weighted interleave as the task policy (set_mempolicy) with weights 3:1: the region's pages split 3:1 at first touch.",M2,
 "[kernel.weighted_interleave]\nsemantics = \"6.9\"\nweights = [3, 1]",
 wl([R("data","64MiB")], policy='{ mode = "weighted_interleave", nodes = [0, 1] }'),
 "weighted interleave (task policy): exact shares",
 checks(exact("app.data.N0"),exact("app.data.N1")), duration="3s")
# 13 wi vma
scenario("wi-vma","Weighted interleave as a VMA policy (mbind) with weights 5:2 on a 3-node machine.",M3,
 "[kernel.weighted_interleave]\nsemantics = \"6.9\"\nweights = [5, 2, 1]",
 wl([R("data","48MiB",place='{ mode = "weighted_interleave", nodes = [0, 1, 2] }'),R("plain","16MiB")]),
 "weighted interleave (VMA policy) over three nodes: exact shares",
 checks(exact("app.data.N0"),exact("app.data.N1"),exact("app.data.N2"),exact("app.plain.N0")), duration="3s")
# 14-17 ksm
def ksmk(mac=1, pts=100, sleep=20, extra=""):
    return f"[kernel.ksm]\nrun = 1\nmerge_across_nodes = {mac}\npages_to_scan = {pts}\nsleep_millisecs = {sleep}\n{extra}"
kchecks=lambda *x: checks(final("ksm_pages_shared"),final("ksm_pages_sharing"),final("ksm_full_scans"),*x)
scenario("ksm-across-nodes","KSM with merge_across_nodes = 1: identical pages on two nodes merge into one KSM page.",M2,
 ksmk(1,1000,20),
 wl([R("a","16MiB",place=bind0,ksm="identical"),R("b","16MiB",place=bind1,ksm="identical"),R("u","8MiB",place=bind0,ksm="unique")]),
 "merge_across_nodes = 1: one stable tree",
 kchecks(at("ksm_pages_sharing",["5s"]),first("ksm_pages_shared")), duration="20s")
scenario("ksm-per-node","KSM with merge_across_nodes = 0: identical pages merge only with pages on the same node (one KSM page per node).",M2,
 ksmk(0,1000,20),
 wl([R("a","16MiB",place=bind0,ksm="identical"),R("b","16MiB",place=bind1,ksm="identical"),R("u","8MiB",place=bind0,ksm="unique")]),
 "merge_across_nodes = 0: per-node trees",
 kchecks(at("ksm_pages_sharing",["5s"]),first("ksm_pages_shared")), duration="20s")
scenario("ksm-pacing","ksmd's pacing with the default pages_to_scan = 100 and sleep_millisecs = 20: how long full scans take.",M2,
 ksmk(1,100,20),
 wl([R("a","8MiB",place=bind0,ksm="identical_within_region"),R("b","8MiB",place=bind0,ksm="unique")]),
 "default pacing: full scans and merge times",
 kchecks(at("ksm_full_scans",["10s","20s"]),first("ksm_pages_shared"),at("ksm_pages_sharing",["5s","10s"])), duration="30s")
scenario("ksm-max-sharing","max_page_sharing = 16: 2048 identical pages need a chain of KSM pages (dups), each shared at most 16 times.",M2,
 ksmk(1,500,10,"max_page_sharing = 16\n"),
 wl([R("a","8MiB",place=bind0,ksm="identical")]),
 "max_page_sharing: stable-node chains and dups",
 checks(final("ksm_pages_shared"),final("ksm_pages_sharing"),final("ksm_stable_node_chains"),final("ksm_stable_node_dups"),final("ksm_full_scans")), duration="20s")
# 18 3-node promotion from the middle tier
scenario("promote-3node","Promotion from two slow tiers on a 3-node machine (DRAM, a middle CXL node and a slow node): both promote to the CPU's node.",M3,
 "[kernel]\nnuma_balancing = 2\ndemotion_enabled = true",
 wl([R("mid","48MiB",place='{ mode = "bind", nodes = [1] }',pattern="uniform",rate=100000),R("far","48MiB",place='{ mode = "bind", nodes = [2] }',pattern="uniform",rate=100000)]),
 "3 nodes: promotion from both lower tiers",
 checks(scan,final("pgpromote_success"),first("pgpromote_success"),exact("app.mid.N0"),exact("app.far.N0")), duration="30s")
# 19 DAMON_RECLAIM paging cold memory out to zram
ZRAM_SETUP = """#!/bin/sh
# zram swap of the scenario's kernel.zram capacity (modules copied into the guest by
# validation/record.sh; zsmalloc and lzo-rle are built in).
for m in lz4_compress lz4hc_compress zram; do insmod /modules/$m.ko || exit 1; done
echo lzo-rle > /sys/block/zram0/comp_algorithm
echo $((512 << 20)) > /sys/block/zram0/disksize
mkswap /dev/zram0 >/dev/null && swapon /dev/zram0
"""
# On 6.11-6.16 (6.12.y included) the module destroys its own scheme when enabled (upstream
# bug, fixed by fed48693bdfe in 6.17; docs/fidelity.md): the recording shows no reclaim.
scenario("damon-reclaim-zram","DAMON_RECLAIM pages out memory idle for min_age (5 s) to a zram swap device, at most quota_sz (256 MiB) per second; the hot set stays. On 6.11-6.16 the module drops its scheme when enabled (fixed in 6.17 by fed48693bdfe), so those kernels reclaim nothing.",M2,
 "[kernel]\n[kernel.zram]\ncapacity = \"512MiB\"\n[kernel.damon.reclaim]\nenabled = true\nmin_age_us = 5000000\nquota_ms = 0\nquota_sz = 268435456\nquota_reset_interval_ms = 1000\nwmarks_high = 1000\nwmarks_mid = 999\nwmarks_low = 0",
 wl([R("hot","64MiB",place=bind0,pattern="uniform",rate=100000),R("cold","256MiB",place=bind0)]),
 "DAMON_RECLAIM: when cold memory goes to zram, how fast, and that the hot set stays",
 checks(first("pswpout"),at("pswpout",["10s","20s"]),final("pswpout"),at("app.cold.N0",["10s"]),final("app.cold.N0"),final("app.hot.N0"),at("damon_reclaim_bytes_reclaim_tried_regions",["10s"]),final("damon_reclaim_bytes_reclaim_tried_regions"),final("damon_reclaim_nr_quota_exceeds")),
 duration="30s", setup=ZRAM_SETUP)
# 19b DAMON_RECLAIM's scheme through DAMON sysfs, which 6.12's module bug does not touch.
scenario("damos-pageout-zram","DAMON_RECLAIM's scheme through the DAMON sysfs interface: one paddr kdamond (5 ms / 100 ms, as the module's defaults) pages out regions idle for 5 s (min_age 50 aggregations) to a zram swap device, at most 256 MiB per second, oldest first (age weight, as the module), watermarks off; the hot set stays. Unlike the module on 6.11-6.16 (see damon-reclaim-zram), this runs on 6.12.",M2,
 """[kernel]
[kernel.zram]
capacity = "512MiB"
[[kernel.damon.contexts]]
ops = "paddr"                  # the host's biggest System RAM range, as DAMON_RECLAIM
attrs = { sample_us = 5000, aggr_us = 100000, min_nr_regions = 10, max_nr_regions = 1000 }
[[kernel.damon.contexts.schemes]]
action = "pageout"
access_pattern = { min_sz = 4096, min_nr_accesses = 0, max_nr_accesses = 0, min_age = 50 }
quotas = { sz = 268435456, reset_interval_ms = 1000, weights = { age_permil = 1 } }
watermarks = { metric = "none" }""",
 wl([R("hot","64MiB",place=bind0,pattern="uniform",rate=100000),R("cold","256MiB",place=bind0)]),
 "DAMOS pageout through DAMON sysfs (DAMON_RECLAIM's scheme): when cold memory goes to zram, how fast, and that the hot set stays",
 checks({"#":["When the workload's own pages start going out. Not `first pswpout`: in all four",
              "recordings the guest's first 33-61 swapped pages (6.5-6.8 s) belonged to other processes",
              "(app.cold.N0 still 65536 then), memory this machine does not model."],
         **first("app.cold.N0"), "below":"65536"},
        at("pswpout",["10s","20s"]),final("pswpout"),at("app.cold.N0",["10s"]),final("app.cold.N0"),final("app.hot.N0"),
        at("damon_ctx0_scheme0_sz_tried",["10s"]),final("damon_ctx0_scheme0_sz_tried"),final("damon_ctx0_scheme0_qt_exceeds"),
        at("damon_ctx0_scheme0_sz_applied",["10s"]),final("damon_ctx0_scheme0_sz_applied")),
 duration="30s", setup=ZRAM_SETUP)
# 19c The time quota (`quotas.ms`): the size a charge window may take is the kdamond's
# measured throughput (bytes charged over time spent applying) times ms, so how much goes
# out depends on how cheap the regions walked so far were (free memory, a few tens of ns a
# page, against zram compression). Without and with prioritisation (the weights of
# damon-tests' pdarc_v4 schemes, the RFC's table): with them, the oldest regions come first,
# and in a mostly free machine those are free memory.
for tq_name, tq_weights, tq_what in (
        ("damos-time-quota", "sz_permil = 0, nr_accesses_permil = 0, age_permil = 0", "in address order (no prioritisation weights)"),
        ("damos-time-quota-prio", "sz_permil = 0, nr_accesses_permil = 3, age_permil = 7", "coldest first (weights size 0, access rate 3, age 7, as damon-tests' pdarc_v4_2 schemes)")):
    scenario(tq_name, f"DAMOS pageout of regions idle for 5 s under a 20 ms/s time quota, {tq_what}: one paddr kdamond (5 ms / 100 ms) over the guest's memory, most of it free; the quota's size is the kdamond's measured throughput times 20 ms.",M2,
     f"""[kernel]
[kernel.zram]
capacity = "512MiB"
[[kernel.damon.contexts]]
ops = "paddr"
attrs = {{ sample_us = 5000, aggr_us = 100000, min_nr_regions = 10, max_nr_regions = 1000 }}
[[kernel.damon.contexts.schemes]]
action = "pageout"
access_pattern = {{ min_sz = 4096, min_nr_accesses = 0, max_nr_accesses = 0, min_age = 50 }}
quotas = {{ ms = 20, reset_interval_ms = 1000, weights = {{ {tq_weights} }} }}
watermarks = {{ metric = "none" }}""",
     wl([R("hot","64MiB",place=bind0,pattern="uniform",rate=100000),R("cold","256MiB",place=bind0)]),
     f"DAMOS pageout under a 20 ms/s time quota, {tq_what}: how much is tried and paged out, how fast",
     checks(at("damon_ctx0_scheme0_sz_tried",["15s","30s","45s"]),final("damon_ctx0_scheme0_sz_tried"),
            at("damon_ctx0_scheme0_sz_applied",["15s","30s","45s"]),final("damon_ctx0_scheme0_sz_applied"),
            final("damon_ctx0_scheme0_nr_tried"),final("damon_ctx0_scheme0_qt_exceeds"),
            at("app.cold.N0",["30s"]),final("app.cold.N0"),final("app.hot.N0")),
     duration="60s", setup=ZRAM_SETUP)
# 20 zram swap under memory pressure: the hot set faults in during the run on a node that
# already holds an idle filler; reclaim swaps the filler out to zram. Stores only: a load
# from an untouched anonymous page maps the shared zero page in the kernel (first
# recording: the hot region stayed at 0 pages), which the simulator does not model.
scenario("zram-pressure","Swap to zram under memory pressure: a hot set faulted in during the run on node 0, which already holds an idle filler; kswapd and direct reclaim swap filler pages out (no demotion).",M2,
 "[kernel]\n[kernel.zram]\ncapacity = \"512MiB\"\n# The runner's pages hold one 64-bit word: lzo-rle stores them in zsmalloc's smallest\n# classes (about 48 bytes of 4096), at most 64x in the model\ncompression_ratio = 64.0",
 wl([R("cold","560MiB",place=bind0),R("hot","512MiB",mbind=bind0,populate=False,pattern="uniform",rate=100000)], read_ratio=0),
 "zram under pressure: how much is swapped, by whom, and what stays resident",
 checks(first("pswpout"),at("pswpout",["5s","10s"]),final("pswpout"),final("pgsteal_kswapd"),final("pgsteal_direct"),final("pswpin"),final("app.cold.N0"),final("app.hot.N0")),
 duration="30s", setup=ZRAM_SETUP)
