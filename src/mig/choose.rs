//! The one MIG profile chooser. The recommender (the profile a replica gets), render (the
//! resource a pod asks for on a pool's layouts) and the review (a right-size that fits) all
//! choose here, with the *effective* MIG manager, so the three can no longer disagree about
//! what a replica fits in or what AKS can create.

use crate::catalog::{MigProfile, MigSpec};
use crate::core::MigManager;

/// What one replica needs of a MIG instance: the one input of every fit test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SliceNeed {
    /// GiB its server must see, when known.
    pub memory_gib: Option<f64>,
    /// The share of an instance's memory its server may take (its cap; 1 without a server).
    pub usable: f64,
    /// SM slices it needs.
    pub compute_slices: f64,
}

impl SliceNeed {
    /// A replica using `share` of a GPU on `spec`; `whole` for a replica of one or more whole
    /// GPUs, which needs every compute slice.
    pub(crate) fn new(
        spec: &MigSpec,
        memory_gib: Option<f64>,
        usable: f64,
        share: f64,
        whole: bool,
    ) -> Self {
        let slices = f64::from(spec.compute_slices);
        SliceNeed {
            memory_gib,
            usable,
            compute_slices: if whole { slices } else { share * slices },
        }
    }

    /// Whether profile `p` holds the replica: its memory, times the share the replica's
    /// server may take, covers the need, and its compute slices cover the replica's.
    pub(crate) fn held_by(&self, p: &MigProfile) -> bool {
        self.memory_gib
            .is_none_or(|m| p.memory_gib * self.usable + 1e-9 >= m)
            && f64::from(p.compute) + 1e-9 >= self.compute_slices
    }
}

/// The profiles `manager` creates on `spec` unasked: under AKS only those of its
/// `gpu_instance` (MIG1g … MIG7g); under the GPU Operator every profile but the media-engine
/// variants (`+me`, `-me`), which a plan gets only by naming them.
pub(crate) fn creatable(spec: &MigSpec, manager: MigManager) -> impl Iterator<Item = &MigProfile> {
    spec.profiles.iter().filter(move |p| match manager {
        MigManager::Aks => spec.aks_creates(&p.name),
        MigManager::GpuOperator => !p.name.contains('+') && !p.name.contains("-me"),
    })
}

/// The smallest of `among` that holds `need`: fewest memory slices, then fewest compute
/// slices, then by name, so the choice never depends on the order of a table.
pub(crate) fn smallest_holding<'p>(
    among: impl IntoIterator<Item = &'p MigProfile>,
    need: &SliceNeed,
) -> Option<&'p MigProfile> {
    among
        .into_iter()
        .filter(|p| need.held_by(p))
        .min_by(|a, b| {
            (a.memory_slices, a.compute)
                .cmp(&(b.memory_slices, b.compute))
                .then(a.name.cmp(&b.name))
        })
}

/// The profile a pod asks for among a pool's layouts (the GPU Operator's mixed strategy: one
/// resource per profile): the smallest that holds it, else the largest, the one whose fit
/// the rules then judge (GP021) and render requests.
pub(crate) fn requested<'p>(
    among: impl IntoIterator<Item = &'p MigProfile> + Clone,
    need: &SliceNeed,
) -> Option<&'p MigProfile> {
    smallest_holding(among.clone(), need).or_else(|| {
        among.into_iter().max_by(|a, b| {
            (a.memory_slices, a.compute)
                .cmp(&(b.memory_slices, b.compute))
                .then(a.name.cmp(&b.name))
        })
    })
}

/// The profile a replica gets on a GPU of `spec` partitioned by `manager`.
pub(crate) fn choose<'s>(
    spec: &'s MigSpec,
    need: &SliceNeed,
    manager: MigManager,
) -> Option<&'s MigProfile> {
    smallest_holding(creatable(spec, manager), need)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn a100() -> MigSpec {
        let c = Catalog::embedded(&[crate::core::Provider::Azure]).expect("embedded catalog");
        c.gpu("A100-80GB")
            .and_then(|g| g.mig.clone())
            .expect("A100 80GB has MIG")
    }

    /// Issue 41: a slice holds what the driver gives it (`nvidia-smi mig -lgip` on A100 80GB:
    /// 19.50 GiB for 1g.20gb and 2g.20gb, 39.25 GiB for 3g.40gb and 4g.40gb), not its name.
    #[test]
    fn a_slice_holds_what_the_driver_gives_not_the_name() {
        let spec = a100();
        let gib = |n: &str| spec.profile(n).map(|p| p.memory_gib);
        assert_eq!(gib("2g.20gb"), Some(19.5));
        assert_eq!(gib("3g.40gb"), Some(39.25));
        let pick = |need: f64| {
            let n = SliceNeed::new(&spec, Some(need), 1.0, 0.1, false);
            choose(&spec, &n, MigManager::GpuOperator).map(|p| p.name.clone())
        };
        assert_eq!(pick(19.5).as_deref(), Some("1g.20gb"));
        assert_eq!(pick(19.8).as_deref(), Some("3g.40gb"));
        assert_eq!(pick(39.25).as_deref(), Some("3g.40gb"));
        assert_eq!(pick(39.5).as_deref(), Some("7g.80gb"));
        assert_eq!(pick(79.5), None);
    }

    /// Issue 41: RTX PRO 6000 Blackwell (g7e) partitions into four instances (NVIDIA's
    /// supported GPUs), each of what the driver would give it.
    #[test]
    fn the_rtx_pro_6000_partitions_into_four() {
        let c = Catalog::embedded(&[crate::core::Provider::Aws]).expect("embedded catalog");
        let spec = c
            .gpu("RTX-PRO-6000-BSE")
            .and_then(|g| g.mig.clone())
            .expect("RTX PRO 6000 has MIG");
        assert_eq!((spec.compute_slices, spec.memory_slices), (4, 4));
        let n = SliceNeed::new(&spec, Some(30.0), 1.0, 0.25, false);
        let p = choose(&spec, &n, MigManager::GpuOperator).expect("fits");
        assert_eq!(p.name, "2g.48gb");
        assert!(p.memory_gib < 48.0);
        let full: u32 = spec
            .profiles
            .iter()
            .filter(|p| p.name == "1g.24gb")
            .map(|p| u32::from(p.max_count))
            .sum();
        assert_eq!(full, 4);
    }

    #[test]
    fn aks_never_gets_a_profile_it_cannot_create() {
        let spec = a100();
        // A seventh of the compute and 12 GiB: 1g.20gb under the GPU Operator, but AKS
        // creates no 1g.20gb, so its smallest holding profile is 2g.20gb.
        let need = SliceNeed::new(&spec, Some(12.0), 1.0, 0.1, false);
        let op = choose(&spec, &need, MigManager::GpuOperator).expect("fits");
        let aks = choose(&spec, &need, MigManager::Aks).expect("fits");
        assert_eq!(op.name, "1g.20gb");
        assert_eq!(aks.name, "2g.20gb");
        assert!(spec.aks_creates(&aks.name));
    }

    #[test]
    fn a_whole_gpu_replica_needs_every_compute_slice() {
        let spec = a100();
        let need = SliceNeed::new(&spec, Some(1.0), 1.0, 1.0, true);
        assert_eq!(
            choose(&spec, &need, MigManager::GpuOperator).map(|p| p.name.as_str()),
            Some("7g.80gb")
        );
    }

    #[test]
    fn a_server_cap_shrinks_what_a_slice_holds() {
        let spec = a100();
        // 9 GiB at a 0.9 cap needs 10 GiB of slice: 1g.10gb holds it only uncapped.
        let capped = SliceNeed::new(&spec, Some(9.5), 0.9, 0.1, false);
        let uncapped = SliceNeed::new(&spec, Some(9.5), 1.0, 0.1, false);
        let op = MigManager::GpuOperator;
        assert_ne!(
            choose(&spec, &capped, op).map(|p| p.name.as_str()),
            Some("1g.10gb")
        );
        assert_eq!(
            choose(&spec, &uncapped, op).map(|p| p.name.as_str()),
            Some("1g.10gb")
        );
    }
}
