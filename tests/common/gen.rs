//! Plans of the kind platform teams write, generated from a seed: the same plans on every
//! run and machine, for the invariant tests (recommend, check) and the cluster model (render).

/// A small deterministic generator (xorshift): the same plans on every run and machine.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next() % xs.len() as u64) as usize]
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A plan of the kind a platform team writes, from a seed.
pub fn generated(seed: u64) -> String {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let azure = r.chance(50);
    let (provider, regions) = if azure {
        (
            "azure",
            *r.pick(&["\"eastus\"", "\"eastus\", \"westus3\"", "\"eastus2\""]),
        )
    } else {
        (
            "aws",
            *r.pick(&["\"us-east-1\"", "\"us-east-1\", \"us-west-2\""]),
        )
    };
    let mm = if azure {
        *r.pick(&["aks", "gpu-operator"])
    } else {
        "gpu-operator"
    };
    let mut t = format!(
        "version = 1\n\n[plan]\nname = \"gen-{seed}\"\nowner = \"platform\"\nprovider = \"{provider}\"\nregions = [{regions}]\n\n[cluster]\nmig_manager = \"{mm}\"\n"
    );
    let n = 1 + r.next() % 5;
    let mut shared = false;
    for i in 0..n {
        let kind = *r.pick(&["inference", "inference", "notebook", "batch", "training"]);
        let _ = std::fmt::Write::write_fmt(
            &mut t,
            format_args!(
                "\n[[workload]]\nname = \"w{i}\"\nteam = \"t{}\"\nkind = \"{kind}\"\n",
                i % 2
            ),
        );
        match kind {
            "training" => {
                let nodes = *r.pick(&[1, 2, 4]);
                let gpus = *r.pick(&[4, 8]);
                t += &format!("nodes = {nodes}\ngpus = {gpus}\n");
                if r.chance(50) {
                    t += "interruptible = true\ncheckpoint_minutes = 30\n";
                }
            }
            "notebook" => {
                let max = 1 + r.next() % 12;
                t += &format!("replicas = {{ min = 0, max = {max} }}\ngpus = 1\n");
                let sharing = *r.pick(&["time-slicing", "dedicated", "mig"]);
                t += &format!("sharing = \"{sharing}\"\n");
                shared |= sharing != "dedicated";
                if r.chance(50) {
                    t += &format!("gpu_memory_gib = {}\n", r.pick(&[4, 8, 10, 16, 20]));
                }
                if r.chance(50) {
                    t += &format!("utilization = {}\n", r.pick(&["0.1", "0.2", "0.3"]));
                }
            }
            _ => {
                let min = if kind == "batch" { 0 } else { 1 + r.next() % 3 };
                let max = min + r.next() % 6;
                t += &format!("replicas = {{ min = {min}, max = {} }}\n", max.max(1));
                if kind == "inference" && r.chance(40) {
                    t += "user_facing = true\n";
                }
                if kind == "batch" {
                    t += "interruptible = true\n";
                }
                let params = *r.pick(&[1.5, 3.0, 7.0, 8.0, 13.0, 34.0, 70.0]);
                let precision = *r.pick(&["bf16", "bf16", "fp8", "int4"]);
                let gpus = if params >= 34.0 && precision == "bf16" {
                    *r.pick(&[2, 4, 8])
                } else {
                    *r.pick(&[1, 1, 2])
                };
                let sharing = if gpus == 1 {
                    *r.pick(&["dedicated", "dedicated", "mig", "time-slicing"])
                } else {
                    "dedicated"
                };
                shared |= sharing != "dedicated";
                if sharing == "mig" && r.chance(70) {
                    // A slice's worth of compute: MIG picks the profile from it and memory.
                    t += &format!(
                        "gpu_fraction = {}\n",
                        r.pick(&["0.14", "0.28", "0.42", "0.5"])
                    );
                } else {
                    t += &format!("gpus = {gpus}\n");
                }
                t += &format!(
                    "sharing = \"{sharing}\"\nmodel = {{ params_billion = {params}, precision = \"{precision}\" }}\n"
                );
                if r.chance(60) {
                    t += &format!("kv_cache_gib = {}\n", r.pick(&[1, 2, 5, 10, 20, 60]));
                }
                if shared {
                    t += "fault_domain = \"shared\"\n";
                }
                if r.chance(70) {
                    t += "\n[workload.server]\nengine = \"vllm\"\n";
                    if r.chance(60) {
                        t += &format!(
                            "gpu_memory_utilization = {}\n",
                            r.pick(&["0.8", "0.85", "0.9", "0.95"])
                        );
                    }
                    if gpus > 1 {
                        t += &format!("tensor_parallel_size = {gpus}\n");
                    }
                }
            }
        }
        if shared && matches!(kind, "training" | "notebook") {
            t += "fault_domain = \"shared\"\n";
        }
    }
    if shared {
        t += "\n[[decision]]\nfault_domain = \"shared\"\ndecided_by = \"platform-lead\"\ndate = 2026-11-02\nreason = \"dev and batch tolerate a noisy neighbour\"\n";
    }
    t
}

/// A plan with the knobs the first generator leaves alone: MPS, fractions on time-slicing,
/// memory stated without a model, allow-lists of GPU models and SKUs, host CPU and RAM,
/// evaluation jobs, known quota, a device plugin that refuses requests above one.
pub fn generated_wide(seed: u64) -> String {
    let mut r = Rng(seed.wrapping_mul(0xD1B5_4A32_D192_ED03) | 1);
    let azure = r.chance(50);
    let (provider, regions) = if azure {
        ("azure", *r.pick(&["\"eastus\"", "\"westus3\", \"eastus\""]))
    } else {
        (
            "aws",
            *r.pick(&["\"us-east-1\"", "\"us-west-2\", \"us-east-1\""]),
        )
    };
    let mm = if azure {
        *r.pick(&["aks", "gpu-operator"])
    } else {
        "gpu-operator"
    };
    let strict = r.chance(30);
    let mut t = format!(
        "version = 1\n\n[plan]\nname = \"wide-{seed}\"\nowner = \"platform\"\nprovider = \"{provider}\"\nregions = [{regions}]\n\n[cluster]\nmig_manager = \"{mm}\"\nfail_requests_greater_than_one = {strict}\n"
    );
    let models: &[&str] = if azure {
        &[
            "\"A100-80GB\"",
            "\"H100-80GB\"",
            "\"T4\"",
            "\"A10\"",
            "\"A100-80GB\", \"H100-80GB\"",
        ]
    } else {
        &[
            "\"A100-80GB\"",
            "\"H100-80GB\"",
            "\"L4\"",
            "\"L40S\"",
            "\"A10G\"",
            "\"T4\"",
            "\"L4\", \"A10G\"",
        ]
    };
    let n = 1 + r.next() % 6;
    let mut shared = false;
    for i in 0..n {
        let kind = *r.pick(&["inference", "evaluation", "notebook", "batch", "inference"]);
        t += &format!(
            "\n[[workload]]\nname = \"w{i}\"\nteam = \"t{}\"\nkind = \"{kind}\"\n",
            i % 3
        );
        let min = if matches!(kind, "inference") {
            1 + r.next() % 2
        } else {
            0
        };
        let max = (min + r.next() % 8).max(1);
        t += &format!("replicas = {{ min = {min}, max = {max} }}\n");
        let sharing = *r.pick(&[
            "dedicated",
            "mig",
            "time-slicing",
            "mps",
            "dedicated",
            "shared-server",
        ]);
        shared |= sharing != "dedicated";
        t += &format!("sharing = \"{sharing}\"\n");
        match r.next() % 3 {
            0 => {
                let p = *r.pick(&[1.0, 3.0, 7.0, 8.0, 14.0]);
                let prec = *r.pick(&["bf16", "fp16", "int8", "int4", "fp8"]);
                t += &format!("model = {{ params_billion = {p}, precision = \"{prec}\" }}\n");
                if r.chance(50) {
                    t += &format!("kv_cache_gib = {}\n", r.pick(&[1, 2, 4, 8]));
                }
            }
            1 => {
                t += &format!(
                    "gpu_memory_gib = {}\n",
                    r.pick(&[3, 6, 9, 12, 18, 22, 38, 44])
                )
            }
            _ => {}
        }
        if sharing != "dedicated" && r.chance(50) {
            t += &format!(
                "gpu_fraction = {}\n",
                r.pick(&["0.1", "0.25", "0.3", "0.5"])
            );
        }
        if r.chance(40) {
            t += &format!("utilization = {}\n", r.pick(&["0.05", "0.2", "0.5", "0.9"]));
        }
        if r.chance(40) {
            t += &format!("gpu_models = [{}]\n", r.pick(models));
        } else if r.chance(25) {
            let skus: &[&str] = if azure {
                &[
                    "\"Standard_NC24ads_A100_v4\"",
                    "\"Standard_NC40ads_H100_v5\"",
                    "\"Standard_NC8as_T4_v3\", \"Standard_NC64as_T4_v3\"",
                    "\"Standard_NV36ads_A10_v5\"",
                    "\"Standard_NC96ads_A100_v4\", \"Standard_NC24ads_A100_v4\"",
                ]
            } else {
                &[
                    "\"g6.xlarge\"",
                    "\"g6.12xlarge\", \"g6.48xlarge\"",
                    "\"g5.xlarge\"",
                    "\"p4d.24xlarge\"",
                    "\"g6e.xlarge\", \"g6e.12xlarge\"",
                    "\"p3.2xlarge\"",
                ]
            };
            t += &format!("skus = [{}]\n", r.pick(skus));
        }
        if r.chance(15) {
            // A replica of several GPUs, sometimes asking to time-share (GP003: it cannot).
            t += &format!("gpus = {}\n", r.pick(&[2, 4]));
            if r.chance(50) {
                t += "model = { params_billion = 34, precision = \"fp32\" }\nkv_cache_gib = 20\n";
            }
        }
        if r.chance(30) {
            t += &format!(
                "cpu = {}\nmemory_gib = {}\n",
                r.pick(&[2, 4, 8, 16]),
                r.pick(&[8, 16, 32, 64])
            );
        }
        if kind != "inference" && r.chance(50) {
            t += "interruptible = true\ncheckpoint_minutes = 15\n";
        }
        if kind == "evaluation" {
            t += &format!("hours_per_month = {}\n", r.pick(&[30, 120, 730]));
        }
        if sharing != "dedicated" {
            t += "fault_domain = \"shared\"\n";
        }
        if kind == "inference" && r.chance(60) {
            t += "\n[workload.server]\nengine = \"vllm\"\n";
            if r.chance(50) {
                t += &format!(
                    "gpu_memory_utilization = {}\n",
                    r.pick(&["0.5", "0.7", "0.9"])
                );
            }
        }
    }
    if shared {
        t += "\n[[decision]]\nfault_domain = \"shared\"\ndecided_by = \"platform-lead\"\ndate = 2026-11-02\nreason = \"tolerated\"\n";
    }
    if azure && r.chance(30) {
        t += "\n[[quota]]\nregion = \"eastus\"\nfamily = \"standardNCADSA100v4Family\"\nvcpus = 48\n";
    }
    // A declared pool that names its own MIG manager for the first workload: the recommender
    // must keep that manager for it (the written plan replaces the pools).
    if azure && r.chance(40) {
        let own = if mm == "aks" { "gpu-operator" } else { "aks" };
        t += &format!("\n[[pool]]\nname = \"today\"\nsku = \"Standard_NC24ads_A100_v4\"\nregion = \"eastus\"\nnodes = 1\nmig_manager = \"{own}\"\nworkloads = [\"w0\"]\n");
    }
    t
}
