//! The origin's integration tests, one binary with a module per subject.
//! `common` holds the harness: stores under key prefixes of their own,
//! databases of their own, the router driven in-process and real servers on
//! loopback ports, so tests on parallel threads never share state.

mod common;

mod abandon;
mod admin;
mod bad_input;
mod booking_api;
mod booking_confirm;
mod booking_holds;
mod booking_seatmap;
mod cluster;
mod console;
mod eta;
mod faults;
mod fifo;
mod hardening;
mod held_polls;
mod joins;
mod limits;
mod line;
mod methods;
mod openapi;
mod pages;
mod parity;
mod payment_knob;
mod persistence;
mod promoter;
mod sale;
mod sessions;
mod slow_clients;
mod snapshots;
mod tokens;
