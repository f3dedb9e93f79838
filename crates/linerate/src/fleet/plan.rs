//! The rounds of a mesh: every ordered pair of N agents once, in rounds of disjoint pairs,
//! so that each agent is in at most one test at a time.
//!
//! The circle method of a round-robin tournament: with N even, agent N-1 stays put and the
//! others turn round a circle; round r pairs N-1 with r, and (r+k) with (r-k) modulo N-1
//! for k = 1..N/2-1. That gives N-1 rounds of N/2 disjoint unordered pairs, each pair in
//! exactly one round. The first N-1 rounds run each pair one way, the next N-1 the other
//! way: 2(N-1) rounds of N/2 ordered pairs. With N odd a ghost agent makes N+1 and whoever
//! meets it sits the round out: 2N rounds of (N-1)/2 pairs (N(N-1) ordered pairs cannot
//! fit fewer rounds of (N-1)/2).

/// One ordered pair: the agent that sends the order (and runs the client) and its target,
/// as indexes into the agents' list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pair {
    /// The agent that runs the test (the client end).
    pub source: usize,
    /// The agent the test goes to (the server end).
    pub destination: usize,
}

/// The rounds, in order; each a list of disjoint pairs.
pub fn rounds(n: usize) -> Vec<Vec<Pair>> {
    if n < 2 {
        return Vec::new();
    }
    let m = n + n % 2;
    let ghost = (n % 2 == 1).then_some(m - 1);
    let turn = m - 1;
    let mut one_way: Vec<Vec<(usize, usize)>> = Vec::with_capacity(turn);
    for r in 0..turn {
        let mut round = vec![(r, m - 1)];
        for k in 1..m / 2 {
            round.push(((r + k) % turn, (r + turn - k) % turn));
        }
        // Alternate who runs the test against the fixed agent, so that no agent is the
        // source in every round of a half.
        if r % 2 == 1 {
            round[0] = (m - 1, r);
        }
        one_way.push(
            round
                .into_iter()
                .filter(|&(a, b)| Some(a) != ghost && Some(b) != ghost)
                .collect(),
        );
    }
    let forth = one_way.iter().map(|r| {
        r.iter()
            .map(|&(a, b)| Pair {
                source: a,
                destination: b,
            })
            .collect()
    });
    let back = one_way.iter().map(|r| {
        r.iter()
            .map(|&(a, b)| Pair {
                source: b,
                destination: a,
            })
            .collect()
    });
    forth.chain(back).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_ordered_pair_once_in_disjoint_rounds() {
        for n in 2..=21 {
            let rs = rounds(n);
            let expected_rounds = if n % 2 == 0 { 2 * (n - 1) } else { 2 * n };
            assert_eq!(rs.len(), expected_rounds, "n={n}");
            let mut seen = BTreeSet::new();
            for (i, r) in rs.iter().enumerate() {
                assert_eq!(r.len(), n / 2, "n={n} round {i}: floor(n/2) pairs");
                let mut busy = BTreeSet::new();
                for p in r {
                    assert!(p.source < n && p.destination < n, "n={n}: {p:?}");
                    assert_ne!(p.source, p.destination, "n={n}: {p:?}");
                    assert!(busy.insert(p.source), "n={n} round {i}: {} twice", p.source);
                    assert!(
                        busy.insert(p.destination),
                        "n={n} round {i}: {} twice",
                        p.destination
                    );
                    assert!(seen.insert(*p), "n={n}: {p:?} twice");
                }
            }
            assert_eq!(seen.len(), n * (n - 1), "n={n}: every ordered pair");
        }
    }

    #[test]
    fn six_agents_take_ten_rounds_of_three() {
        let rs = rounds(6);
        assert_eq!(rs.len(), 10);
        assert!(rs.iter().all(|r| r.len() == 3));
        assert!(rounds(1).is_empty() && rounds(0).is_empty());
        assert_eq!(
            rounds(2),
            vec![
                vec![Pair {
                    source: 0,
                    destination: 1
                }],
                vec![Pair {
                    source: 1,
                    destination: 0
                }]
            ]
        );
    }
}
