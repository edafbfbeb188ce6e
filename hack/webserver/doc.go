// Command webserver is a tiny static HTTP server used as the web-server test
// image built by hack/containerd-setup.sh. critest's networking, streaming,
// multi-container and PID-namespace specs expect nginx/httpd images from
// registries this project cannot reach; this program stands in for them.
//
// In the image it is installed as /usr/sbin/nginx and started as
//
//	nginx -listen :80 -pidfile /var/run/nginx.pid "master process"
//
// so that it satisfies what those specs look for: `pidof nginx` finds it,
// /proc/PID/cmdline contains "master process", /var/run/nginx.pid holds its
// PID, its log mentions "httpd", and GET / answers 200. It exits 0 on
// SIGTERM or SIGINT. Standard library only; build with CGO_ENABLED=0.
//
// hack/containerd-setup.sh builds main.go alone, copied into a private
// module, so the program's code must stay in main.go; this file holds only
// the package comment.
package main
