//! Accounts of the operator's site the visitors share (`--accounts`): how
//! many browsers each account has and which browser is whose. A person
//! opens several tabs and devices, at different moments: an account's
//! browsers take random places on the arrival curve, so the curve keeps
//! its shape and no account arrives all at once.

use crate::error::Error;
use crate::rng::Rng;

/// Most browsers (tabs, devices) one account uses.
pub const MAX_BROWSERS: usize = 8;

/// The account id the tool's site gives account `i` (the token's `sub`).
pub fn account_id(i: usize) -> String {
    format!("acct-{i}")
}

/// Browsers per account: each 1 to [`MAX_BROWSERS`], `visitors` in all.
/// Drawn evenly from that range, then nudged one browser at a time (a
/// random account each time) until the total matches.
pub fn browsers(visitors: usize, accounts: usize, rng: &mut Rng) -> Result<Vec<usize>, Error> {
    if accounts == 0 || visitors < accounts || visitors > accounts * MAX_BROWSERS {
        return Err(Error::Config(format!(
            "--accounts {accounts} for {visitors} visitors: each account has 1 to {MAX_BROWSERS} browsers"
        )));
    }
    let mut n: Vec<usize> = (0..accounts)
        .map(|_| 1 + rng.below(MAX_BROWSERS as u64) as usize)
        .collect();
    let total: usize = n.iter().sum();
    // Accounts that may still lose (or gain) a browser.
    let (shrink, step): (fn(usize) -> bool, isize) = if total > visitors {
        (|b| b > 1, -1)
    } else {
        (|b| b < MAX_BROWSERS, 1)
    };
    let mut open: Vec<usize> = (0..accounts)
        .filter(|&i| n.get(i).is_some_and(|&b| shrink(b)))
        .collect();
    for _ in 0..total.abs_diff(visitors) {
        let k = rng.below(open.len() as u64) as usize;
        let Some(&i) = open.get(k) else { break };
        if let Some(b) = n.get_mut(i) {
            *b = b.saturating_add_signed(step);
            if !shrink(*b) {
                open.swap_remove(k);
            }
        }
    }
    Ok(n)
}

/// The account of each visitor in arrival order: every account's browsers
/// shuffled over the arrivals.
pub fn assign(browsers: &[usize], rng: &mut Rng) -> Vec<usize> {
    let mut out: Vec<usize> = browsers
        .iter()
        .enumerate()
        .flat_map(|(account, &n)| std::iter::repeat_n(account, n))
        .collect();
    // Fisher-Yates.
    for i in (1..out.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        out.swap(i, j);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browsers_add_up_and_stay_in_range() {
        let mut rng = Rng::new(3);
        for (visitors, accounts) in [(20_000, 5_000), (300, 100), (5, 5), (40, 5), (1, 1)] {
            let n = browsers(visitors, accounts, &mut rng).unwrap();
            assert_eq!(n.len(), accounts);
            assert_eq!(n.iter().sum::<usize>(), visitors, "{visitors}/{accounts}");
            assert!(n.iter().all(|b| (1..=MAX_BROWSERS).contains(b)));
        }
        // 4 a head on average: every count from 1 to 8 occurs.
        let n = browsers(20_000, 5_000, &mut rng).unwrap();
        for b in 1..=MAX_BROWSERS {
            assert!(n.contains(&b), "nobody has {b}");
        }
        for (visitors, accounts) in [(4, 5), (41, 5), (1, 0)] {
            assert!(browsers(visitors, accounts, &mut rng).is_err());
        }
    }

    #[test]
    fn each_account_gets_its_browsers_spread_over_the_arrivals() {
        let mut rng = Rng::new(5);
        let n = browsers(20_000, 5_000, &mut rng).unwrap();
        let who = assign(&n, &mut rng);
        assert_eq!(who.len(), 20_000);
        let mut count = vec![0usize; 5_000];
        let (mut first, mut last) = (vec![usize::MAX; 5_000], vec![0usize; 5_000]);
        for (i, &a) in who.iter().enumerate() {
            count[a] += 1;
            first[a] = first[a].min(i);
            last[a] = last[a].max(i);
        }
        assert_eq!(count, n);
        // Accounts of several browsers arrive over a stretch of the curve,
        // not at once: typically a good part of it.
        let spans: Vec<usize> = (0..5_000)
            .filter(|&a| n[a] >= 4)
            .map(|a| last[a] - first[a])
            .collect();
        let mut sorted = spans.clone();
        sorted.sort_unstable();
        assert!(
            sorted[sorted.len() / 2] > 5_000,
            "median span {}",
            sorted[sorted.len() / 2]
        );
        assert_eq!(account_id(7), "acct-7");
    }
}
