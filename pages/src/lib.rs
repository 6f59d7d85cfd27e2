//! The waiting room's HTML pages, from one source for the edge (a worker in
//! wasm) and the origin (axum): each page is one self-contained document
//! (CSS and script inline, no outside assets, no framework) in English and
//! Korean, served under a Content-Security-Policy that allows exactly its
//! own inline style and script (by hash) and requests to its own site.
//!
//! # Layout
//! - [`waiting`]: the waiting page, polling the queue API until admitted.
//! - [`seats`]: the seat page at `/book/{room}/`: performances, the seat map,
//!   hold, countdown, confirm, the booking.
//! - [`console`]: the operator's console at `/admin/`: every room live, its
//!   history and its controls, over the admin API.
//! - [`lobby`]: the origin's front door (the room list) and short notices
//!   (unknown room, unavailable) for browsers.
//! - [`Lang`]: the pages' languages and how a request picks one.
//! - `skeleton`: the document, base stylesheet and CSP every page shares;
//!   a page brings only its body, its own style, script and words.
//! - `html`: escaping, the JSON config block, CSP hashes and the
//!   `{{key}}` filler the skeleton and the pages render with.
//!
//! This crate only renders: it does no I/O, knows no server or store, and
//! decides nothing about who may see a page. The caller passes the room, the
//! URLs the page talks to and what to do when the queue is down; the edge
//! and the origin each decide those for themselves. Each page lives in its
//! own module, so a binary links only the pages it renders (the edge links
//! the waiting page alone).

#![forbid(unsafe_code)]
pub mod console;
mod html;
mod lang;
pub mod lobby;
pub mod seats;
mod skeleton;
pub mod waiting;

pub use console::ConsolePage;

/// The site's icon (`/favicon.ico`): a ticket in the pages' colour, as
/// SVG (every current browser takes an SVG icon at that path).
pub const FAVICON_SVG: &str = include_str!("favicon.svg");
pub use html::DEFAULT_COLOR;
pub use lang::{Lang, weighted};
pub use lobby::{Notice, RoomLink, RoomState};
pub use seats::SeatPage;
pub use waiting::WaitingPage;

/// The `Content-Type` every page is served with.
pub const CONTENT_TYPE: &str = "text/html; charset=utf-8";
