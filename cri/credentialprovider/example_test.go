package credentialprovider_test

import (
	"fmt"

	"github.com/kubeletkit/kubeletkit/cri/credentialprovider"
)

// A configuration is checked with upstream's rules before any plugin runs.
func ExampleParseConfig() {
	cfg, err := credentialprovider.ParseConfig([]byte(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: ecr-credential-provider
  matchImages: ["*.dkr.ecr.*.amazonaws.com"]
  defaultCacheDuration: 12h
  apiVersion: credentialprovider.kubelet.k8s.io/v1
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p := cfg.Providers[0]
	fmt.Println(p.Name, p.MatchImages, p.DefaultCacheDuration.Duration)
	// Output: ecr-credential-provider [*.dkr.ecr.*.amazonaws.com] 12h0m0s
}
