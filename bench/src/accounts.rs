//! The operator's side of identity for the benchmarks: one HS256 key, the
//! origin's identities checked with it, and tokens minted with it, each
//! naming an account of its own.

use origin::identity::Identities;
use origin::room::RoomId;
use token::IdentityKeys;

/// The HS256 identity key's `kid`.
pub const IDENTITY_KID: &str = "site";
/// The HS256 identity key's secret.
pub const IDENTITY_SECRET: &[u8] = b"bench-identity-secret-0123456789";

/// The origin's identity keys (the one HS256 key) and account hasher.
pub fn identities() -> Result<Identities, String> {
    let spec = format!(
        "{IDENTITY_KID}:{}",
        std::str::from_utf8(IDENTITY_SECRET).map_err(|e| e.to_string())?
    );
    let keys = IdentityKeys::parse(Some(&spec), None).map_err(|e| e.to_string())?;
    Ok(Identities::new(
        Some(keys),
        b"bench-account-hash-key-0123456789",
    ))
}

/// `count` identity tokens for `room`, accounts `account-0` on, issued at
/// `now` (unix seconds) and valid for an hour.
pub fn tokens(room: &RoomId, count: u64, now: u64) -> Vec<String> {
    (0..count)
        .map(|i| {
            let claims = serde_json::json!({
                "sub": format!("account-{i}"), "aud": room.as_str(),
                "iat": now, "exp": now + 3_600,
            });
            token::sign_hs256(IDENTITY_KID, IDENTITY_SECRET, &claims)
        })
        .collect()
}

/// Unix seconds now.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
