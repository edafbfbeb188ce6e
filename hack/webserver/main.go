package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", ":80", "address to listen on")
	pidfile := flag.String("pidfile", "/var/run/nginx.pid", "file to write the PID to (empty: none)")
	root := flag.String("root", "/www", "directory to serve; a built-in page when it does not exist")
	flag.Parse() // positional arguments (e.g. "master process") are ignored

	mux := http.NewServeMux()
	if st, err := os.Stat(*root); err == nil && st.IsDir() {
		mux.Handle("/", http.FileServer(http.Dir(*root)))
	} else {
		mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintln(w, "<html><body>kubeletkit test web server</body></html>")
		})
	}
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()

	if *pidfile != "" {
		if err := os.WriteFile(*pidfile, []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "httpd: writing pid file: %v\n", err)
		}
	}
	fmt.Printf("httpd: kubeletkit test web server (pid %d) listening on %s\n", os.Getpid(), *listen)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	select {
	case err := <-errc:
		fmt.Fprintf(os.Stderr, "httpd: %v\n", err)
		os.Exit(1)
	case sig := <-sigs:
		fmt.Printf("httpd: got %v, shutting down\n", sig)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if *pidfile != "" {
			_ = os.Remove(*pidfile)
		}
	}
}
