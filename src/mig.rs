//! MIG placement: can a set of instances live on one GPU under NVIDIA's placement rules?
//!
//! A profile occupies `memory_slices` consecutive memory slices starting at one of its allowed
//! start indices (from `nvidia-smi mig -lgipp`), and `compute` SM slices. Instances may not
//! overlap in memory slices, their compute may not exceed the GPU's SM slices, and no profile
//! may appear more often than its maximum count (one `+me` instance per GPU). Summing slices is
//! not enough: on A100 80GB, `4g.40gb + 3g.40gb` fits (starts 0 and 4) but
//! `3g.40gb x 2 + 1g.10gb` does not, although both use 7 compute slices: the two 3g instances
//! take all 8 memory slices.

use indexmap::IndexMap;

mod choose;
pub mod pack;

pub(crate) use choose::{choose, requested, SliceNeed};

use crate::catalog::{MigProfile, MigSpec};

/// Why a layout cannot be placed.
#[derive(Debug, Clone, PartialEq)]
pub enum LayoutError {
    UnknownProfile(String),
    TooMany {
        profile: String,
        count: u32,
        max: u8,
    },
    ComputeExceeded {
        used: u32,
        available: u8,
    },
    NoPlacement,
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayoutError::UnknownProfile(p) => write!(f, "this GPU has no MIG profile `{p}`"),
            LayoutError::TooMany {
                profile,
                count,
                max,
            } => write!(f, "{count} x `{profile}` but at most {max} fit on one GPU"),
            LayoutError::ComputeExceeded { used, available } => write!(
                f,
                "the layout needs {used} compute slices and the GPU has {available}"
            ),
            LayoutError::NoPlacement => write!(
                f,
                "the slices add up, but no placement puts every instance at an allowed start without overlapping memory slices"
            ),
        }
    }
}

/// Where each instance starts (memory slice index), in the order of the expanded layout.
pub(crate) type Placement = Vec<(String, u8)>;

/// Check a layout (profile -> count) against a GPU's MIG geometry; on success return one
/// valid placement.
pub(crate) fn place(
    spec: &MigSpec,
    layout: &IndexMap<String, u32>,
) -> Result<Placement, LayoutError> {
    let mut items: Vec<&MigProfile> = Vec::new();
    let mut compute = 0u32;
    for (name, &count) in layout {
        let p = spec
            .profile(name)
            .ok_or_else(|| LayoutError::UnknownProfile(name.clone()))?;
        if count > u32::from(p.max_count) {
            return Err(LayoutError::TooMany {
                profile: name.clone(),
                count,
                max: p.max_count,
            });
        }
        compute += u32::from(p.compute) * count;
        items.extend(std::iter::repeat_n(p, count as usize));
    }
    if compute > u32::from(spec.compute_slices) {
        return Err(LayoutError::ComputeExceeded {
            used: compute,
            available: spec.compute_slices,
        });
    }
    // Largest first: big instances have the fewest starts, so the search fails fast.
    items.sort_by(|a, b| {
        b.memory_slices
            .cmp(&a.memory_slices)
            .then(a.starts.len().cmp(&b.starts.len()))
    });
    let mut chosen = Vec::with_capacity(items.len());
    if search(&items, 0, 0, &mut chosen) {
        Ok(items
            .iter()
            .zip(chosen)
            .map(|(p, s)| (p.name.clone(), s))
            .collect())
    } else {
        Err(LayoutError::NoPlacement)
    }
}

fn mask(p: &MigProfile, start: u8) -> u32 {
    ((1u32 << p.memory_slices) - 1) << start
}

fn search(items: &[&MigProfile], i: usize, used: u32, chosen: &mut Vec<u8>) -> bool {
    let Some(p) = items.get(i) else {
        return true;
    };
    // Identical instances are interchangeable: only try starts after the previous twin's
    // start, which removes the permutations without losing any placement.
    let min_start = if i > 0 && items[i - 1].name == p.name {
        chosen[i - 1] + 1
    } else {
        0
    };
    for &s in p.starts.iter().filter(|&&s| s >= min_start) {
        let m = mask(p, s);
        if used & m == 0 {
            chosen.push(s);
            if search(items, i + 1, used | m, chosen) {
                return true;
            }
            chosen.pop();
        }
    }
    false
}

/// How many instances of one profile place on one GPU (0 when the GPU lacks the profile):
/// what AKS creates per GPU for a `gpu_instance`, and the most a uniform layout holds.
pub(crate) fn per_gpu(spec: &MigSpec, profile: &str) -> u32 {
    let Some(p) = spec.profile(profile) else {
        return 0;
    };
    // Placeability only gets harder with more instances: the last count that places is it.
    (1..=u32::from(p.max_count))
        .take_while(|&k| check(spec, &IndexMap::from([(profile.to_owned(), k)])).is_ok())
        .last()
        .unwrap_or(0)
}

/// Whether an instance of `profile` takes more than half of the GPU's compute or memory
/// slices: no two such instances share a GPU, whatever their placements.
pub(crate) fn more_than_half(spec: &MigSpec, profile: &MigProfile) -> bool {
    2 * u32::from(profile.compute) > u32::from(spec.compute_slices)
        || 2 * u32::from(profile.memory_slices) > u32::from(spec.memory_slices)
}

/// Whether a layout fits; the reason when it does not.
pub fn check(spec: &MigSpec, layout: &IndexMap<String, u32>) -> Result<(), LayoutError> {
    place(spec, layout).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use proptest::prelude::*;

    fn spec(gpu: &str) -> MigSpec {
        static CATALOG: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
        let c = CATALOG.get_or_init(|| Catalog::embedded(&[]).expect("embedded catalog loads"));
        c.gpu(gpu).and_then(|g| g.mig.clone()).expect("MIG GPU")
    }

    fn layout(items: &[(&str, u32)]) -> IndexMap<String, u32> {
        items.iter().map(|(p, n)| ((*p).to_owned(), *n)).collect()
    }

    /// Every assignment of starts, no pruning: the reference the search is tested against.
    fn brute_force(spec: &MigSpec, layout: &IndexMap<String, u32>) -> bool {
        let mut items = Vec::new();
        let mut compute = 0u32;
        for (n, &c) in layout {
            let Some(p) = spec.profile(n) else {
                return false;
            };
            if c > u32::from(p.max_count) {
                return false;
            }
            compute += u32::from(p.compute) * c;
            for _ in 0..c {
                items.push(p);
            }
        }
        if compute > u32::from(spec.compute_slices) {
            return false;
        }
        fn go(items: &[&MigProfile], used: u32) -> bool {
            match items.split_first() {
                None => true,
                Some((p, rest)) => p.starts.iter().any(|&s| {
                    let m = mask(p, s);
                    used & m == 0 && go(rest, used | m)
                }),
            }
        }
        go(&items, 0)
    }

    #[test]
    fn known_a100_layouts() {
        let s = spec("A100-80GB");
        assert!(check(&s, &layout(&[("3g.40gb", 1), ("4g.40gb", 1)])).is_ok());
        assert!(check(&s, &layout(&[("1g.10gb", 7)])).is_ok());
        assert!(check(&s, &layout(&[("2g.20gb", 2), ("3g.40gb", 1)])).is_ok());
        assert!(check(&s, &layout(&[("3g.40gb", 2)])).is_ok());
        // 7 compute slices, but the two 3g instances hold all 8 memory slices.
        assert_eq!(
            check(&s, &layout(&[("3g.40gb", 2), ("1g.10gb", 1)])),
            Err(LayoutError::NoPlacement)
        );
        assert!(check(
            &s,
            &layout(&[("4g.40gb", 1), ("2g.20gb", 1), ("1g.10gb", 1)])
        )
        .is_ok());
        // 1g.20gb is double memory: four use all 8 memory slices, a 2g cannot join.
        assert_eq!(
            check(&s, &layout(&[("1g.20gb", 4), ("2g.20gb", 1)])),
            Err(LayoutError::NoPlacement)
        );
        assert!(matches!(
            check(&s, &layout(&[("7g.80gb", 1), ("1g.10gb", 1)])),
            Err(LayoutError::ComputeExceeded { used: 8, .. })
        ));
        assert!(matches!(
            check(&s, &layout(&[("1g.10gb+me", 2)])),
            Err(LayoutError::TooMany { max: 1, .. })
        ));
        assert!(matches!(
            check(&s, &layout(&[("3g.20gb", 1)])),
            Err(LayoutError::UnknownProfile(_))
        ));
    }

    #[test]
    fn per_gpu_counts_what_places() {
        let s = spec("A100-80GB");
        assert_eq!(per_gpu(&s, "3g.40gb"), 2);
        assert_eq!(per_gpu(&s, "1g.20gb"), 4);
        assert_eq!(per_gpu(&s, "7g.80gb"), 1);
        assert_eq!(per_gpu(&s, "3g.20gb"), 0);
    }

    #[test]
    fn a30_is_a_four_slice_gpu() {
        let s = spec("A30");
        assert!(check(&s, &layout(&[("2g.12gb", 1), ("1g.6gb", 2)])).is_ok());
        assert!(check(&s, &layout(&[("4g.24gb", 1), ("1g.6gb", 1)])).is_err());
    }

    #[test]
    fn placements_never_overlap() {
        let s = spec("H100-80GB");
        let p = place(&s, &layout(&[("1g.10gb", 3), ("2g.20gb", 2)])).expect("fits");
        let mut used = 0u32;
        for (name, start) in &p {
            let prof = s.profile(name).expect("profile");
            assert!(prof.starts.contains(start));
            let m = mask(prof, *start);
            assert_eq!(used & m, 0, "{name} at {start} overlaps");
            used |= m;
        }
    }

    proptest! {
        #[test]
        fn search_agrees_with_brute_force(counts in proptest::collection::vec(0u32..4, 7), gpu in 0usize..3) {
            let name = ["A100-40GB", "H200-141GB", "A30"][gpu];
            let s = spec(name);
            let l: IndexMap<String, u32> = s.profiles.iter().zip(&counts)
                .filter(|(_, &c)| c > 0)
                .map(|(p, &c)| (p.name.clone(), c))
                .collect();
            let fast = place(&s, &l);
            prop_assert_eq!(fast.is_ok(), brute_force(&s, &l));
            if let Ok(p) = fast {
                // the placement returned is itself valid
                let mut used = 0u32;
                for (n, st) in p {
                    let prof = s.profile(&n).expect("profile");
                    prop_assert!(prof.starts.contains(&st));
                    let m = mask(prof, st);
                    prop_assert_eq!(used & m, 0);
                    used |= m;
                }
            }
        }
    }
}
