//! Black-box tests of the merchant API over real loopback HTTP, one binary.

mod helpers;

mod auth;
mod charging;
mod cli;
mod crash;
mod headers;
mod openapi;
mod receiver;
mod staff;
mod webhooks;

mod customers;
mod installments;
mod isolation;
mod mandates;
mod receivables;
