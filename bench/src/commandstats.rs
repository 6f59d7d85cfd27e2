//! Redis's own account of the scripts it ran (`INFO commandstats`), read
//! the same way by `bench` and `request_cost`.

/// Script calls and the Redis time they took (µs), `EVALSHA` and `EVAL`
/// together, from the text of `INFO commandstats`.
pub fn script_totals(info: &str) -> (u64, u64) {
    let mut total = (0, 0);
    for line in info.lines() {
        let Some(rest) = line
            .strip_prefix("cmdstat_evalsha:")
            .or_else(|| line.strip_prefix("cmdstat_eval:"))
        else {
            continue;
        };
        for field in rest.split(',') {
            match field.split_once('=') {
                Some(("calls", v)) => total.0 += v.parse::<u64>().unwrap_or(0),
                Some(("usec", v)) => total.1 += v.parse::<u64>().unwrap_or(0),
                _ => {}
            }
        }
    }
    total
}
