"""The Bumble host of swift-ancs, one module per job: `common` (what the roles
share), `serve` (the Notification Provider), `consume` (the Notification
Consumer), `link` (virtual controllers). `ancs_bumble_host.py` beside this
package is the program."""
