// Command plugin is a credential provider plugin for the tests: it answers
// any request with credentials for *.registry.example whose username names
// the image asked for, and appends the image to $PLUGIN_RUNS, one line a
// run. $PLUGIN_CACHE_KEY_TYPE and $PLUGIN_CACHE_DURATION set the answer's
// cache key type (Image by default) and duration (unset by default);
// $PLUGIN_API_VERSION its apiVersion; $PLUGIN_FAIL makes it exit 1.
// $PLUGIN_REQUESTS names a file it appends each request to, as one line of
// JSON (the service account token and annotations it was sent with it);
// $PLUGIN_PASSWORD_IS_TOKEN answers the token sent as the password.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	var req struct {
		APIVersion                string            `json:"apiVersion"`
		Kind                      string            `json:"kind"`
		Image                     string            `json:"image"`
		ServiceAccountToken       string            `json:"serviceAccountToken,omitempty"`
		ServiceAccountAnnotations map[string]string `json:"serviceAccountAnnotations,omitempty"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil || req.Kind != "CredentialProviderRequest" {
		fmt.Fprintln(os.Stderr, "bad request", err)
		os.Exit(2)
	}
	if f := os.Getenv("PLUGIN_RUNS"); f != "" {
		out, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(out, req.Image)
			out.Close()
		}
	}
	if f := os.Getenv("PLUGIN_REQUESTS"); f != "" {
		out, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			_ = json.NewEncoder(out).Encode(req)
			out.Close()
		}
	}
	if os.Getenv("PLUGIN_FAIL") != "" {
		fmt.Fprintln(os.Stderr, "failing as asked")
		os.Exit(1)
	}
	password := "secret"
	if os.Getenv("PLUGIN_PASSWORD_IS_TOKEN") != "" {
		password = req.ServiceAccountToken
	}
	resp := map[string]any{
		"apiVersion":   req.APIVersion,
		"kind":         "CredentialProviderResponse",
		"cacheKeyType": "Image",
		"auth": map[string]any{
			"*.registry.example": map[string]string{"username": "user-for-" + req.Image, "password": password},
		},
	}
	if v := os.Getenv("PLUGIN_API_VERSION"); v != "" {
		resp["apiVersion"] = v
	}
	if v := os.Getenv("PLUGIN_CACHE_KEY_TYPE"); v != "" {
		resp["cacheKeyType"] = v
	}
	if v := os.Getenv("PLUGIN_CACHE_DURATION"); v != "" {
		resp["cacheDuration"] = v
	}
	if err := json.NewEncoder(os.Stdout).Encode(resp); err != nil {
		os.Exit(3)
	}
}
