// Package tlstest makes TLS handshakes for tests: Handshake runs one
// against a server configuration over an in-memory pipe and says which
// certificate the server presented. No network, no goroutine left behind;
// it works inside a testing/synctest bubble.
package tlstest
