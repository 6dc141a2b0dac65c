//! AKS MIG geometry, exactly: AKS creates one profile per node pool (`gpu_instance`), so a
//! family of MIG workloads on one SKU becomes single-profile pools, and a workload may take a
//! larger profile than its own where sharing that pool's nodes saves some. Which workload goes
//! to which profile is chosen by exhaustive search with a bound, judged by nodes at peak, then
//! at the floor (the family shares one SKU, region and capacity type: nodes are its cost).
//!
//! Under AKS's single strategy every MIG pod asks for `nvidia.com/gpu`, so the replicas of a
//! workload may split across the family's pools (`split`): the search branches on the
//! members that stay whole and places the splittable replicas exactly at each leaf. That
//! placement is a suffix greedy, exact because AKS's profiles form a chain (MIG1g to MIG7g):
//! a replica that fits a profile fits every larger one, and a node holds no more instances of
//! a larger profile than of a smaller one. The peak is placed exactly; the floor follows the
//! peak's split (a pool never keeps more replicas warm than it holds at peak).

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

/// (Nodes at peak, nodes at the floor) of single-profile pools holding `peak[k]` and
/// `floor[k]` replicas of profile `k`.
fn pool_nodes(peak: &[u32], floor: &[u32], per_node: &[u32]) -> (u32, u32) {
    (0..per_node.len()).fold((0, 0), |(p, f), k| {
        (
            p + nodes(peak[k], per_node[k]),
            f + nodes(floor[k], per_node[k]),
        )
    })
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
    pool_nodes(&peak, &floor, per_node)
}

/// Members the exhaustive search branches on (5 profiles: 5^10 leaves at most, far fewer after
/// the bound); a family with more members that stay whole keeps them on their own profiles.
pub(super) const EXACT_MEMBERS: usize = 10;

/// Where one member's replicas go: (profile, replicas at peak, replicas at the floor).
pub(super) type Parts = Vec<(usize, u32, u32)>;

/// The lowest profile a member fits, when its fits are a suffix of the chain (every profile
/// from there up): only such a member is placed by the greedy.
fn chain_start(fits: &[bool]) -> Option<usize> {
    let m = fits.iter().position(|&f| f)?;
    fits[m..].iter().all(|&f| f).then_some(m)
}

/// Splittable replicas placed on top of fixed loads, fewest nodes first: from the largest
/// profile down, each pool gets the nodes its fixed load needs, and more only where the
/// replicas that need this profile or a larger one no longer fit in the free slots above.
/// Returns the nodes per profile.
fn fluid_nodes(per_node: &[u32], fixed: &[u32], need_from: &[u32]) -> Vec<u32> {
    let k = per_node.len();
    let mut n = vec![0u32; k];
    let mut free_above = 0u64;
    let mut demand_from = 0u64;
    for t in (0..k).rev() {
        demand_from += u64::from(need_from[t]);
        let pn = u64::from(per_node[t].max(1));
        let own = u64::from(fixed[t]).div_ceil(pn);
        let short = (demand_from + u64::from(fixed[t])).saturating_sub(free_above);
        let nt = own.max(short.div_ceil(pn));
        n[t] = u32::try_from(nt).unwrap_or(u32::MAX);
        free_above += nt * pn - u64::from(fixed[t]);
        // The free slots at and above `t` now cover the demand from `t` up; what is left is
        // free for the profiles below.
        let used = demand_from.min(free_above);
        free_above -= used;
        demand_from -= used;
    }
    n
}

/// The cheapest assignment of members to profiles, where `fits[i][k]` says whether profile `k`
/// holds a replica of member `i` and `per_node[k]` is how many instances of it a node has;
/// members with `split[i]` may spread their replicas over several profiles. `None` when a
/// member fits no profile or the family is too large to search.
pub(super) fn assign(
    members: &[Member],
    per_node: &[u32],
    fits: &[Vec<bool>],
    split: &[bool],
) -> Option<Vec<Parts>> {
    if members
        .iter()
        .enumerate()
        .any(|(i, _)| !fits[i].contains(&true))
    {
        return None;
    }
    let fluid: Vec<Option<usize>> = (0..members.len())
        .map(|i| split[i].then(|| chain_start(&fits[i])).flatten())
        .collect();
    let none: Vec<Option<usize>> = vec![None; members.len()];
    let kept = assign_whole(members, per_node, fits, &none)
        .map(|whole| place(members, per_node, &whole, &none));
    if fluid.iter().all(Option::is_none) {
        return kept;
    }
    let with_split = assign_whole(members, per_node, fits, &fluid)
        .map(|whole| place(members, per_node, &whole, &fluid));
    // Never worse than keeping every member whole (the floor of a split is a heuristic); a
    // family too large to search whole may still be searched with its splittable members.
    match (with_split, kept) {
        (Some(s), Some(k)) => Some(if total(&s, per_node) <= total(&k, per_node) {
            s
        } else {
            k
        }),
        (s, k) => s.or(k),
    }
}

/// (Nodes at peak, nodes at the floor) of a placement.
pub(super) fn total(parts: &[Parts], per_node: &[u32]) -> (u32, u32) {
    let mut peak = vec![0u32; per_node.len()];
    let mut floor = vec![0u32; per_node.len()];
    for p in parts {
        for &(k, pk, fk) in p {
            peak[k] += pk;
            floor[k] += fk;
        }
    }
    pool_nodes(&peak, &floor, per_node)
}

/// The members' parts: whole members on their profile, splittable ones placed by the greedy
/// at the peak, their floors following the peak's split.
fn place(
    members: &[Member],
    per_node: &[u32],
    whole: &[usize],
    fluid: &[Option<usize>],
) -> Vec<Parts> {
    let k = per_node.len();
    let mut fixed = vec![0u32; k];
    let mut fixed_floor = vec![0u32; k];
    let mut need_from = vec![0u32; k];
    for (i, m) in members.iter().enumerate() {
        match fluid[i] {
            Some(t) => need_from[t] += m.peak,
            None => {
                fixed[whole[i]] += m.peak;
                fixed_floor[whole[i]] += m.floor;
            }
        }
    }
    let n = fluid_nodes(per_node, &fixed, &need_from);
    let mut free: Vec<u32> = (0..k)
        .map(|t| (n[t] * per_node[t].max(1)).saturating_sub(fixed[t]))
        .collect();
    let mut floor_used = fixed_floor;
    let mut out: Vec<Parts> = vec![Vec::new(); members.len()];
    // The most demanding first; each fills from its own lowest profile up (those below it
    // are of no use to it, and the ones after it can use everything it can).
    let mut order: Vec<usize> = (0..members.len()).filter(|&i| fluid[i].is_some()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(fluid[i]), i));
    for &i in &order {
        let from = fluid[i].unwrap_or(0);
        let mut left = members[i].peak;
        let mut parts: Vec<(usize, u32)> = Vec::new();
        for (t, slots) in free.iter_mut().enumerate().skip(from) {
            let take = left.min(*slots);
            if take > 0 {
                *slots -= take;
                left -= take;
                parts.push((t, take));
            }
        }
        // The greedy's nodes hold every replica; a remainder would be a defect, kept whole
        // on its lowest profile rather than lost.
        if left > 0 {
            parts.push((from, left));
        }
        // Floors go where a warm node already has room, else to the profile with the most
        // instances per node.
        let mut floors = vec![0u32; parts.len()];
        for _ in 0..members[i].floor {
            let pick = (0..parts.len())
                .filter(|&j| floors[j] < parts[j].1)
                .min_by_key(|&j| {
                    let t = parts[j].0;
                    let opens = floor_used[t].is_multiple_of(per_node[t].max(1));
                    (opens, std::cmp::Reverse(per_node[t]), t)
                });
            let Some(j) = pick else { break };
            floors[j] += 1;
            floor_used[parts[j].0] += 1;
        }
        out[i] = parts
            .iter()
            .zip(&floors)
            .map(|(&(t, p), &f)| (t, p, f))
            .collect();
    }
    for (i, m) in members.iter().enumerate() {
        if fluid[i].is_none() {
            out[i] = vec![(whole[i], m.peak, m.floor)];
        }
    }
    out
}

/// The cheapest profile for each member that stays whole (`fluid[i]` is `None`), judged with
/// the splittable replicas placed on top; the splittable members' entries are unused.
fn assign_whole(
    members: &[Member],
    per_node: &[u32],
    fits: &[Vec<bool>],
    fluid: &[Option<usize>],
) -> Option<Vec<usize>> {
    let branching = (0..members.len()).filter(|&i| fluid[i].is_none()).count();
    if branching > EXACT_MEMBERS {
        return None;
    }
    // Big members first: the bound bites sooner.
    let mut order: Vec<usize> = (0..members.len()).filter(|&i| fluid[i].is_none()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(members[i].peak));
    struct Search<'a> {
        members: &'a [Member],
        per_node: &'a [u32],
        fits: &'a [Vec<bool>],
        fluid: &'a [Option<usize>],
        /// Whether any member is placed by the greedy at the leaves.
        any_fluid: bool,
        order: Vec<usize>,
        peak: Vec<u32>,
        floor: Vec<u32>,
        current: Vec<usize>,
        best: Option<((u32, u32), Vec<usize>)>,
    }
    impl Search<'_> {
        fn partial(&self) -> (u32, u32) {
            pool_nodes(&self.peak, &self.floor, self.per_node)
        }
        fn go(&mut self, depth: usize) {
            // Adding replicas never removes a node: the partial cost bounds every completion.
            let bound = self.partial();
            if self.best.as_ref().is_some_and(|(b, _)| bound >= *b) {
                return;
            }
            if depth == self.order.len() {
                // The splittable replicas on top of this assignment, placed exactly.
                let cost = if self.any_fluid {
                    let parts = place(self.members, self.per_node, &self.current, self.fluid);
                    total(&parts, self.per_node)
                } else {
                    bound
                };
                if self.best.as_ref().is_none_or(|(b, _)| cost < *b) {
                    self.best = Some((cost, self.current.clone()));
                }
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
        fluid,
        any_fluid: fluid.iter().any(Option::is_some),
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

    /// A small deterministic generator: the same families on every run.
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

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
        let whole = [false; 3];
        let a = assign(&members, &per_node, &fits, &whole).expect("assigned");
        assert_eq!(total(&a, &per_node), (2, 2));
        assert_eq!(a, vec![vec![(0, 5, 5)], vec![(2, 1, 1)], vec![(2, 1, 1)]]);
    }

    #[test]
    fn a_split_fills_the_spare_slots_of_a_larger_profile() {
        // Eight replicas that need 1g and one that needs 3g, one A100 per node. Whole: MIG1g
        // takes 2 nodes (8 > 7) and MIG3g one, 3 in all. Split: 7 on a MIG1g node and the
        // eighth in the spare 3g slot beside the 3g replica, 2 nodes.
        let per_node = [7, 3, 2];
        let members = [Member { peak: 8, floor: 8 }, Member { peak: 1, floor: 1 }];
        let fits = vec![vec![true, true, true], vec![false, false, true]];
        let kept = assign(&members, &per_node, &fits, &[false, false]).expect("assigned");
        assert_eq!(total(&kept, &per_node), (3, 3));
        let split = assign(&members, &per_node, &fits, &[true, false]).expect("assigned");
        assert_eq!(total(&split, &per_node), (2, 2));
        assert_eq!(split[0], vec![(0, 7, 7), (2, 1, 1)]);
    }

    /// Every placement of every replica of the splittable members on the profiles they fit
    /// (the others whole), floors equal to peaks: the fewest nodes.
    fn brute_split(
        members: &[Member],
        per_node: &[u32],
        fits: &[Vec<bool>],
        split: &[bool],
    ) -> u32 {
        // One unit per whole member, one per replica of a splittable one.
        let units: Vec<(usize, u32)> = members
            .iter()
            .enumerate()
            .flat_map(|(i, m)| {
                let n = if split[i] { m.peak } else { 1 };
                let each = if split[i] { 1 } else { m.peak };
                (0..n).map(move |_| (i, each))
            })
            .collect();
        let mut best = u32::MAX;
        let mut load = vec![0u32; per_node.len()];
        let mut chosen = vec![0usize; units.len()];
        fn go(
            u: usize,
            units: &[(usize, u32)],
            fits: &[Vec<bool>],
            per_node: &[u32],
            load: &mut Vec<u32>,
            chosen: &mut Vec<usize>,
            best: &mut u32,
        ) {
            if u == units.len() {
                let n = (0..per_node.len())
                    .map(|t| nodes(load[t], per_node[t]))
                    .sum();
                *best = (*best).min(n);
                return;
            }
            let (i, each) = units[u];
            // Replicas of one member are interchangeable: their profiles never decrease.
            let from = if u > 0 && units[u - 1].0 == i {
                chosen[u - 1]
            } else {
                0
            };
            for t in from..per_node.len() {
                if fits[i][t] {
                    load[t] += each;
                    chosen[u] = t;
                    go(u + 1, units, fits, per_node, load, chosen, best);
                    load[t] -= each;
                }
            }
        }
        go(0, &units, fits, per_node, &mut load, &mut chosen, &mut best);
        best
    }

    #[test]
    fn the_split_search_matches_brute_force_on_random_families() {
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15u64);
        let per_gpu = [7u32, 3, 2, 1, 1];
        let mut improved = 0;
        for _ in 0..400 {
            let gpus_per_node = [1u32, 1, 2][(next() % 3) as usize];
            let per_node: Vec<u32> = per_gpu.iter().map(|p| p * gpus_per_node).collect();
            let n = 1 + (next() % 4) as usize;
            let mut members = Vec::new();
            let mut fits = Vec::new();
            let mut split = Vec::new();
            for _ in 0..n {
                let peak = 1 + (next() % 5) as u32;
                // Floors equal to peaks or none: where the search is exact on both counts.
                let floor = if next().is_multiple_of(2) { peak } else { 0 };
                members.push(Member { peak, floor });
                let need = (next() % 5) as usize;
                fits.push((0..5).map(|k| k >= need).collect::<Vec<_>>());
                split.push(!next().is_multiple_of(3));
            }
            let a = assign(&members, &per_node, &fits, &split).expect("assigned");
            // Every replica placed, on a profile that holds it; floors within the peak.
            for (i, parts) in a.iter().enumerate() {
                assert_eq!(parts.iter().map(|p| p.1).sum::<u32>(), members[i].peak);
                assert_eq!(parts.iter().map(|p| p.2).sum::<u32>(), members[i].floor);
                for &(t, p, f) in parts {
                    assert!(fits[i][t] && f <= p, "{parts:?}");
                }
                if !split[i] {
                    assert_eq!(parts.len(), 1, "a member that may not split stays whole");
                }
            }
            let (peak, _) = total(&a, &per_node);
            let best = brute_split(&members, &per_node, &fits, &split);
            assert_eq!(peak, best, "{members:?} {per_node:?} {fits:?} {split:?}");
            let whole = brute(&members, &per_node, &fits).expect("some").0;
            improved += usize::from(best < whole);
        }
        // Splitting matters on some of these families, or the test proves nothing.
        assert!(improved > 0);
    }

    #[test]
    fn a_family_too_large_to_search_whole_is_searched_with_its_splits() {
        // Twelve workloads that may split (more than EXACT_MEMBERS whole): the search places
        // them all without branching, and every replica lands on a profile that holds it.
        let per_node = [7, 3, 2, 1, 1];
        let members: Vec<Member> = (0..12)
            .map(|i| Member {
                peak: 1 + i % 3,
                floor: 0,
            })
            .collect();
        let fits: Vec<Vec<bool>> = (0..12)
            .map(|i| (0..5).map(|k| k >= i % 3).collect())
            .collect();
        assert!(assign(&members, &per_node, &fits, &[false; 12]).is_none());
        let a = assign(&members, &per_node, &fits, &[true; 12]).expect("searched");
        for (i, parts) in a.iter().enumerate() {
            assert_eq!(parts.iter().map(|p| p.1).sum::<u32>(), members[i].peak);
            assert!(parts.iter().all(|p| fits[i][p.0]));
        }
        // 4 replicas need 1g or more, 8 need 2g or more, 12 need 3g or more: the 3g ones take
        // 6 MIG3g nodes, the 2g ones 3 MIG2g nodes (one slot spare), the 1g ones the spare 2g
        // slot and one MIG1g node: 10 in all, the fewest (12 3g instances need 6 nodes alone).
        assert_eq!(total(&a, &per_node).0, 10);
    }

    #[test]
    fn the_search_matches_brute_force_on_random_families() {
        let mut next = xorshift(0x2545_F491_4F6C_DD1Du64);
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
            let a = assign(&members, &per_node, &fits, &vec![false; n]).expect("assigned");
            let whole: Vec<usize> = a.iter().map(|p| p[0].0).collect();
            for (i, p) in a.iter().enumerate() {
                assert_eq!(p, &vec![(whole[i], members[i].peak, members[i].floor)]);
                assert!(fits[i][whole[i]]);
            }
            assert_eq!(
                Some(total(&a, &per_node)),
                brute(&members, &per_node, &fits),
                "{members:?} {per_node:?} {fits:?}"
            );
        }
    }
}
