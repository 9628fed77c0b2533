//! Black-box tests of the merchant API over real loopback HTTP, one binary.

mod helpers;

mod journey;

mod auth;
mod charging;
mod cli;
mod crash;
mod desk_sign_in;
mod headers;
mod hostile_input;
mod openapi;
mod receiver;
mod staff;
mod staff_ui_api;
mod webhooks;

mod customers;
mod installments;
mod isolation;
mod link;
mod mandates;
mod receivables;
mod signatures;
