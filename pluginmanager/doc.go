// Package pluginmanager registers the node plugins that announce
// themselves, as upstream kubelet's plugin manager does: a plugin (a CSI
// driver's node-driver-registrar, a DRA driver's kubelet plugin) puts a
// unix socket serving the pluginregistration v1 Registration service in
// the registry directory (<root-dir>/plugins_registry); the manager finds
// it, asks it GetInfo, hands it to the Handler of its type (CSIPlugin,
// DRAPlugin) to validate and register, and tells the plugin how that went
// with NotifyRegistrationStatus. A socket that goes away is deregistered;
// one created again at the same path (a restarted plugin) is deregistered
// and registered anew.
//
// The decisions are Reconcile's, a pure function of the sockets present,
// the plugins registered and the failed attempts' back-off (upstream's 500
// ms doubling to 2m2s per socket). Manager is the thin driver: every
// Period (1s, upstream's reconciler period) on the injected clock it scans
// the directory and its subdirectories (Scan: unix sockets only, names
// starting with "." skipped, as upstream's watcher skips them), runs
// Reconcile and carries out its actions one at a time. Upstream watches the
// directory with inotify and reconciles every second; a scan every second
// finds the same sockets within the same second.
//
// The errors sent to a plugin and returned are upstream's: "RegisterPlugin
// error -- no handler registered for plugin type: T at socket S",
// "RegisterPlugin error -- plugin validation failed with err: ...",
// "RegisterPlugin error -- plugin registration failed with err: ...".
//
// As upstream v1.36's, every failed registration is tried again after the
// socket's back-off: the dial, GetInfo, no handler, ValidatePlugin, a
// refusal by the handler's RegisterPlugin (the plugin is then not
// registered), and a NotifyRegistrationStatus that fails once the handler
// took the plugin, which the handler's DeRegisterPlugin undoes first.
//
// pluginmanagertest has a fake plugin that serves Registration on a
// socket and records what the manager told it.
package pluginmanager
