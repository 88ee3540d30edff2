"""Fixed text of the results page: titles, what each table measures, labels, references.

No measured number lives here: those are in ``docs/results/*.json``.
"""

PAGE_INTRO = """\
# Measured results

All numbers below were measured on this project's reference machine (2 cores, 24 GiB, no GPU)
with the commands shown; timings taken while other jobs shared the machine say so, and every
table gives the load average it ran under.

This page is generated: `python benchmarks/results.py render` writes it from the records in
`docs/results/*.json` (one file per section), and
`python benchmarks/results.py run --only SECTION` re-runs the benchmark behind a section and
stores its records (see `python benchmarks/results.py --help`). Records marked *transcribed
from the README at commit 73be57a* were measured before the page was generated and copied
from the README of that commit, with their commands, dates and load averages."""

TITLES = {
    "accuracy": "Accuracy (GraphSAINT)",
    "shadow": "shaDow-GNN",
    "link": "Link prediction (shaDow-GNN)",
    "sparse": "Sparse input features",
    "speed": "Speed",
    "loaders": "Loaders",
    "distributed": "Distributed training under a shaped link",
    "partition": "Partition quality",
    "shp": "Stochastic hypergraph (SHP) for minibatch training",
    "modes": "Distributed training modes under a shaped link",
    "compare": "Method comparison (scalegnn compare)",
    "shadow_default": "shaDow-GNN's default config against GraphSAINT's default",
    "sampling": "Samplers and PPR: roofline and the reference implementations",
}

ACC_INTRO = ("Test metric, mean over the seeds; transductive setting, shipped configs "
             "(`configs/shared/`), built-in default config for `synthetic`.")
ACC_LABEL = {
    "cora_rw": "Cora `configs/shared/cora_rw.yml`",
    "cora_edge": "Cora `cora_edge.yml`",
    "cora_mrw": "Cora `cora_mrw.yml`",
    "cora_node": "Cora `cora_node.yml`",
    "facebook_rw": "Facebook `facebook_rw.yml` (seeded 50/25/25)",
    "tolokers_rw": "Tolokers `tolokers_rw.yml` (split 0)",
    "synthetic_gnn": "built-in `synthetic` (default config, stops early)",
}
ACC_BOLD = {"cora_rw", "facebook_rw", "tolokers_rw", "synthetic_gnn"}
ACC_REFERENCE = {
    "cora_rw": "GCN 0.815 (Kipf & Welling)",
    "facebook_rw": "full-batch GCN (PyG) 0.912",
    "tolokers_rw": "GCN 0.836 (Platonov et al.)",
}

CONFIG_ABOUT = {
    "configs/shared/cora_shadow.yml": "PPR top-32, 2 layers of 256, center",
    "configs/shared/facebook_shadow.yml": "PPR top-32, 2 layers, center+mean",
    "configs/shared/tolokers_shadow.yml": "PPR top-64, 2 layers, center+mean, `adj_norm: sym`",
    "configs/shared/citeseer_link.yml": "PPR top-32 per end, labels only, hadamard+sum, "
                                        "10 epochs",
    "configs/shared/facebook_link.yml": "1-hop, ≤64 neighbours per end, labels only, "
                                        "`adj_norm: sym`, hadamard+sum, 8 epochs of 20,000 pairs",
}

SHADOW_INTRO = ("SAGE backbone; test metric of the best-validation epoch, one run per seed S "
                "of the command (the per-seed column); beside GraphSAINT with the same "
                "backbone from the accuracy table.")

LINK_INTRO = ("`shadow.task: link`; seeded 85/5/10 edge split, split seed 0, each held-out "
              "test edge ranked against the same 10,000 shared negatives; test metrics of the "
              "best-validation epoch, one run per seed S of the command. The heuristics score the "
              "identical split "
              "on its training graph.")

SPARSE_INTRO = ("Bag-of-words features stay CSR from the loader to the first layer "
                "(see [Data formats](data-formats.md#sparse-input-features)). `auto` keeps CSR "
                "at or below 10% density; the threshold comes from "
                "`benchmarks/sparse_features.py`, which times the forward pass plus the weight "
                "gradient on 2 threads (CSR time / dense time; below 1 the CSR path is faster).")
SPARSE_FACEBOOK = ("Facebook, `configs/shared/facebook_rw.yml` (seeded 50/25/25 split, 40 "
                   "epochs, training seeds 0/1/2). Dense and sparse runs alternated for each "
                   "seed, on 2 cores shared with other jobs.")

LOADERS_INTRO = ("A Kronecker graph with 2^20 nodes, 15.7 M undirected edges, 50 features, "
                 "written in every format and loaded in a fresh process; peak RSS above the "
                 "warmed-up baseline (target: at most 2x the loaded CSR + features).")

DIST_INTRO = ("Gloo ranks on one 2-core host inside `unshare -n`, loopback limited with "
              "`tc ... tbf`, so the link carries the sum of all ranks' traffic; full-graph "
              "epochs; boundary nodes kept with probability p (BNS-GCN); the number of ranks, "
              "hidden size and epochs are the commands' `--nprocs`, `--hidden`, `--epochs`. "
              "Partitioner GP unless the row names another.")
LINK_RATE = {"1gbit": "1 Gbit/s", "50mbit": "50 Mbit/s", "10gbit": "10 Gbit/s"}

PARTITION_INTRO = ("SPEC §6. *volume* = rows a rank sends per layer, *messages* = peers a "
                   "rank sends to per layer, *compute imbalance* = max / mean nnz of the rows "
                   "of A + I. Volumes are deterministic; partitioning times depend on the load. "
                   "`partition compare` prints the table, the geometric means over K of every "
                   "ratio, and writes the JSON table and a PNG (volume avg / max and messages "
                   "max against K).")
PARTITION_TARGETS = [("HP avg volume <= 0.9x GP", "hp/gp", 0, 0.9),
                     ("HP max volume <= 0.6x GP", "hp/gp", 1, 0.6),
                     ("HP avg volume <= 0.25x RP", "hp/rp", 0, 0.25)]

SHP_INTRO = ("SHP partitions the hypergraph of sampled minibatches plus the full graph's "
             "nets (see [Distributed training](distributed.md#stochastic-hypergraph-shp)). "
             "Volume = expected per-minibatch volume Σ_j (λ_j − 1) of 200 fresh minibatches "
             "(mean ± standard error, the same batches for HP and SHP); target: geometric "
             "mean SHP / HP <= 0.95.")

SPEED_INTRO = "2 threads; the machine may be shared: load averages given."
