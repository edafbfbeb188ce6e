// Package pluginmanagertest has a fake plugin for tests of package
// pluginmanager and of its handlers' users: Plugin serves the
// pluginregistration v1 Registration service on a unix socket, answers
// GetInfo with the PluginInfo it is given (or an error, SetInfoError), and
// records every NotifyRegistrationStatus (Statuses; Notified is closed at
// the next). It registers nothing itself: a CSI driver's node service or
// a DRA plugin's service is the test's to serve, at the endpoint the info
// names.
package pluginmanagertest
