//! Black-box tests of the merchant API over real loopback HTTP, one binary.

mod helpers;

mod journey;

mod auth;
mod backups;
mod charging;
mod cli;
mod crash;
mod desk_sign_in;
mod files;
mod headers;
mod hostile_http;
mod hostile_input;
mod hostile_logins;
mod hostile_webhooks;
mod jwt;
mod openapi;
mod postgres;
mod process;
mod receiver;
mod refusals;
mod request_path;
mod secret_grep;
mod staff;
mod staff_audit_chain;
mod staff_lists;
mod staff_mandate_detail;
mod staff_notifications;
mod staff_settings;
mod staff_signatures;
mod staff_ui_api;
mod torture;
mod trigger;
mod webhooks;

mod customer_pages;
mod customers;
mod events_api;
mod holidays;
mod hostile_dates;
mod hostile_pdf;
mod hostile_portal;
mod installments;
mod isolation;
mod ledger;
mod ledger_csv;
mod link;
mod listen;
mod mandate_document;
mod mandates;
mod receivables;
mod sandbox_banner;
mod sandbox_reset;
mod signature_activation;
mod signatures;
