package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// filePair serves a certificate and key pair from two files and loads it
// again when either file changes. It has no goroutine: a handshake looks
// at the files, at most once per interval, and the pair last loaded is
// served until a new one loads whole (a rotation seen half way, the new
// certificate beside the old key, is retried at the next look).
type filePair struct {
	certFile, keyFile string
	interval          time.Duration
	clock             clock.PassiveClock
	log               *slog.Logger

	mu               sync.Mutex
	cert             *tls.Certificate
	certInfo, keyInf os.FileInfo // of the files the pair was loaded from
	looked           time.Time
}

func newFilePair(certFile, keyFile string, o TLSOptions) (*filePair, error) {
	p := &filePair{certFile: certFile, keyFile: keyFile}
	p.interval, p.clock, p.log = reloadDefaults(o.ReloadInterval, o.Clock, o.Logger)
	if err := p.load(); err != nil {
		return nil, err
	}
	p.looked = p.clock.Now()
	return p, nil
}

// load stats both files, then reads the pair; it changes nothing on error.
func (p *filePair) load() error {
	ci, err := os.Stat(p.certFile)
	if err != nil {
		return err
	}
	ki, err := os.Stat(p.keyFile)
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(p.certFile, p.keyFile)
	if err != nil {
		return err
	}
	p.cert, p.certInfo, p.keyInf = &cert, ci, ki
	return nil
}

// changed reports whether either file is no longer the one loaded.
func (p *filePair) changed() (bool, error) {
	for _, f := range []struct {
		name string
		was  os.FileInfo
	}{{p.certFile, p.certInfo}, {p.keyFile, p.keyInf}} {
		now, err := os.Stat(f.name)
		if err != nil {
			return false, err
		}
		if !os.SameFile(now, f.was) || !now.ModTime().Equal(f.was.ModTime()) || now.Size() != f.was.Size() {
			return true, nil
		}
	}
	return false, nil
}

func (p *filePair) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.interval < 0 {
		return p.cert, nil
	}
	if now := p.clock.Now(); now.Sub(p.looked) >= p.interval {
		p.looked = now
		changed, err := p.changed()
		if err == nil && changed {
			err = p.load()
		}
		if err != nil {
			p.log.Warn("serving certificate not reloaded; the pair loaded before is served",
				"certFile", p.certFile, "keyFile", p.keyFile, "err", fmt.Sprint(err))
		}
	}
	return p.cert, nil
}

// reloadDefaults fills in the defaults of a file that is followed: the
// interval DefaultReloadInterval, the real clock, a logger that discards.
func reloadDefaults(interval time.Duration, clk clock.PassiveClock, log *slog.Logger) (time.Duration, clock.PassiveClock, *slog.Logger) {
	if interval == 0 {
		interval = DefaultReloadInterval
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return interval, clk, log
}
