//! AKS MIG geometry, exactly: AKS creates one profile per node pool (`gpu_instance`), so a
//! family of MIG workloads on one SKU becomes single-profile pools, and a workload may take a
//! larger profile than its own where sharing that pool's nodes saves some. Which workload goes
//! to which profile is chosen by exhaustive search with a bound, judged by nodes at peak, then
//! at the floor (the family shares one SKU, region and capacity type: nodes are its cost).
//!
//! Each workload's replicas stay in one pool. Splitting a workload across profiles (possible
//! under the single strategy, where every pod asks for `nvidia.com/gpu`) is not searched.

/// One workload of the family: replicas at peak and at the floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Member {
    pub peak: u32,
    pub floor: u32,
}

/// Nodes of one single-profile pool holding `replicas` when a node holds `per_node`.
fn nodes(replicas: u32, per_node: u32) -> u32 {
    if replicas == 0 {
        0
    } else {
        replicas.div_ceil(per_node.max(1))
    }
}

/// The family's (nodes at peak, nodes at the floor) for an assignment of members to profiles.
#[cfg(test)]
pub(super) fn cost(members: &[Member], per_node: &[u32], assign: &[usize]) -> (u32, u32) {
    let mut peak = vec![0u32; per_node.len()];
    let mut floor = vec![0u32; per_node.len()];
    for (m, &k) in members.iter().zip(assign) {
        peak[k] += m.peak;
        floor[k] += m.floor;
    }
    (0..per_node.len()).fold((0, 0), |(p, f), k| {
        (
            p + nodes(peak[k], per_node[k]),
            f + nodes(floor[k], per_node[k]),
        )
    })
}

/// Members the exhaustive search takes (5 profiles: 5^10 leaves at most, far fewer after the
/// bound); a larger family keeps its members on their own profiles.
pub(super) const EXACT_MEMBERS: usize = 10;

/// The cheapest assignment of members to profiles, where `fits[i][k]` says whether profile `k`
/// holds a replica of member `i` and `per_node[k]` is how many instances of it a node has.
/// `None` when a member fits no profile or the family is too large to search.
pub(super) fn assign(
    members: &[Member],
    per_node: &[u32],
    fits: &[Vec<bool>],
) -> Option<Vec<usize>> {
    if members.len() > EXACT_MEMBERS
        || members
            .iter()
            .enumerate()
            .any(|(i, _)| !fits[i].contains(&true))
    {
        return None;
    }
    // Big members first: the bound bites sooner.
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(members[i].peak));
    struct Search<'a> {
        members: &'a [Member],
        per_node: &'a [u32],
        fits: &'a [Vec<bool>],
        order: Vec<usize>,
        peak: Vec<u32>,
        floor: Vec<u32>,
        current: Vec<usize>,
        best: Option<((u32, u32), Vec<usize>)>,
    }
    impl Search<'_> {
        fn partial(&self) -> (u32, u32) {
            (0..self.per_node.len()).fold((0, 0), |(p, f), k| {
                (
                    p + nodes(self.peak[k], self.per_node[k]),
                    f + nodes(self.floor[k], self.per_node[k]),
                )
            })
        }
        fn go(&mut self, depth: usize) {
            // Adding replicas never removes a node: the partial cost bounds every completion.
            let bound = self.partial();
            if self.best.as_ref().is_some_and(|(b, _)| bound >= *b) {
                return;
            }
            if depth == self.order.len() {
                self.best = Some((bound, self.current.clone()));
                return;
            }
            let i = self.order[depth];
            for k in 0..self.per_node.len() {
                if !self.fits[i][k] {
                    continue;
                }
                self.peak[k] += self.members[i].peak;
                self.floor[k] += self.members[i].floor;
                self.current[i] = k;
                self.go(depth + 1);
                self.peak[k] -= self.members[i].peak;
                self.floor[k] -= self.members[i].floor;
            }
        }
    }
    let mut s = Search {
        members,
        per_node,
        fits,
        order,
        peak: vec![0; per_node.len()],
        floor: vec![0; per_node.len()],
        current: vec![0; members.len()],
        best: None,
    };
    s.go(0);
    s.best.map(|(_, a)| a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every assignment, tried one by one.
    fn brute(members: &[Member], per_node: &[u32], fits: &[Vec<bool>]) -> Option<(u32, u32)> {
        let k = per_node.len();
        let total = k.checked_pow(u32::try_from(members.len()).ok()?)?;
        let mut best: Option<(u32, u32)> = None;
        'next: for code in 0..total {
            let mut c = code;
            let mut a = vec![0; members.len()];
            for (i, slot) in a.iter_mut().enumerate() {
                *slot = c % k;
                c /= k;
                if !fits[i][*slot] {
                    continue 'next;
                }
            }
            let v = cost(members, per_node, &a);
            if best.is_none_or(|b| v < b) {
                best = Some(v);
            }
        }
        best
    }

    #[test]
    fn the_hand_case_takes_two_gpus_not_three() {
        // A100 80GB under AKS, one GPU per node (NC24ads_A100_v4): MIG1g gives 7 x 1g.10gb,
        // MIG2g 3 x 2g.20gb, MIG3g 2 x 3g.40gb. Five replicas that need 1g, one that needs 2g,
        // one that needs 3g: one pool per profile takes 3 GPUs; the 2g replica takes the
        // second 3g slot of the MIG3g GPU instead, so 2 GPUs suffice.
        let per_node = [7, 3, 2];
        let members = [
            Member { peak: 5, floor: 5 },
            Member { peak: 1, floor: 1 },
            Member { peak: 1, floor: 1 },
        ];
        let fits = vec![
            vec![true, true, true],
            vec![false, true, true],
            vec![false, false, true],
        ];
        let a = assign(&members, &per_node, &fits).expect("assigned");
        assert_eq!(cost(&members, &per_node, &a), (2, 2));
        assert_eq!(a, vec![0, 2, 2]);
    }

    #[test]
    fn the_search_matches_brute_force_on_random_families() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        // AKS profiles on a 7-slice GPU: instances per GPU of MIG1g, 2g, 3g, 4g, 7g.
        let per_gpu = [7u32, 3, 2, 1, 1];
        for _ in 0..300 {
            let gpus_per_node = [1u32, 2, 4, 8][(next() % 4) as usize];
            let per_node: Vec<u32> = per_gpu.iter().map(|p| p * gpus_per_node).collect();
            let n = 1 + (next() % 6) as usize;
            let mut members = Vec::new();
            let mut fits = Vec::new();
            for _ in 0..n {
                let peak = 1 + (next() % 20) as u32;
                let floor = (next() % u64::from(peak + 1)) as u32;
                members.push(Member { peak, floor });
                // A member needs some profile and fits every larger one.
                let need = (next() % 5) as usize;
                fits.push((0..5).map(|k| k >= need).collect::<Vec<_>>());
            }
            let a = assign(&members, &per_node, &fits).expect("assigned");
            for (i, &k) in a.iter().enumerate() {
                assert!(fits[i][k]);
            }
            assert_eq!(
                Some(cost(&members, &per_node, &a)),
                brute(&members, &per_node, &fits),
                "{members:?} {per_node:?} {fits:?}"
            );
        }
    }
}
