//! Minting identity tokens, for tests, the benchmarks and the rehearsal:
//! the waiting room itself never signs one (the operator's site does).

use alloc::string::String;
use alloc::vec::Vec;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};

/// The PKCS#8 (RFC 8410) encoding of an Ed25519 private key up to the
/// 32-byte seed, which follows it: the form the JWT library signs with.
const ED25519_PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

fn sign(alg: Algorithm, kid: &str, key: &EncodingKey, claims: &serde_json::Value) -> String {
    // Same backend as the verifier; Err means one is installed already.
    let _ = jsonwebtoken::crypto::CryptoProvider::install_default(
        &jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER,
    );
    let mut header = Header::new(alg);
    header.kid = Some(String::from(kid));
    // Signing fails only for a key of the wrong kind, which these helpers
    // never build; an empty string then fails every verification.
    jsonwebtoken::encode(&header, claims, key).unwrap_or_default()
}

/// Signs `claims` as an HS256 identity token under `kid` with `secret`, as
/// an operator's site listed in `--identity-keys` would. For tests and
/// tools: the claims are taken as given, valid or not.
#[must_use]
pub fn sign_hs256(kid: &str, secret: &[u8], claims: &serde_json::Value) -> String {
    sign(
        Algorithm::HS256,
        kid,
        &EncodingKey::from_secret(secret),
        claims,
    )
}

/// Signs `claims` as an EdDSA (Ed25519) identity token under `kid` with the
/// private key whose 32-byte seed is `seed`; [`ed25519_public_key`] gives
/// the public key to list in `--identity-public-keys`. For tests and tools.
#[must_use]
pub fn sign_ed25519(kid: &str, seed: &[u8; 32], claims: &serde_json::Value) -> String {
    let mut pkcs8 = Vec::with_capacity(ED25519_PKCS8_PREFIX.len() + seed.len());
    pkcs8.extend_from_slice(&ED25519_PKCS8_PREFIX);
    pkcs8.extend_from_slice(seed);
    sign(
        Algorithm::EdDSA,
        kid,
        &EncodingKey::from_ed_der(&pkcs8),
        claims,
    )
}

/// The public key of the Ed25519 private key whose seed is `seed`, in the
/// form `--identity-public-keys` takes (base64url, no padding).
#[must_use]
pub fn ed25519_public_key(seed: &[u8; 32]) -> String {
    let public = ed25519_dalek::SigningKey::from_bytes(seed).verifying_key();
    URL_SAFE_NO_PAD.encode(public.as_bytes())
}
