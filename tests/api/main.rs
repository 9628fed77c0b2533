//! Black-box tests of the merchant API over real loopback HTTP, one binary.

mod helpers;

mod journey;

mod auth;
mod charging;
mod cli;
mod crash;
mod desk_sign_in;
mod files;
mod headers;
mod hostile_logins;
mod hostile_webhooks;
mod hostile_http;
mod openapi;
mod process;
mod receiver;
mod secret_grep;
mod refusals;
mod staff;
mod staff_ui_api;
mod torture;
mod webhooks;

mod customers;
mod hostile_dates;
mod hostile_portal;
mod hostile_pdf;
mod installments;
mod isolation;
mod link;
mod mandates;
mod receivables;
mod signatures;
