package apiserver

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeletkit/kubeletkit/cri/credentialprovider"
)

// ServiceAccounts are credentialprovider.ServiceAccounts on the API
// server, for image credential provider plugins with tokenAttributes (as
// upstream kubelet 1.34+): a service account read with get, a token
// through the TokenRequest API bound to the pod. The Node authorizer lets
// a node do both for the service accounts of the pods bound to it, and
// nothing else. Errors are the API server's. Safe for concurrent use.
type ServiceAccounts struct {
	client kubernetes.Interface
}

var _ credentialprovider.ServiceAccounts = (*ServiceAccounts)(nil)

// NewServiceAccounts returns the service accounts reading through client.
func NewServiceAccounts(client kubernetes.Interface) (*ServiceAccounts, error) {
	if client == nil {
		return nil, fmt.Errorf("new service accounts: client is nil: %w", ErrInvalidArgument)
	}
	return &ServiceAccounts{client: client}, nil
}

// GetServiceAccount reads the service account namespace/name.
func (s *ServiceAccounts) GetServiceAccount(ctx context.Context, namespace, name string) (*v1.ServiceAccount, error) {
	sa, err := s.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get service account %s/%s: %w", namespace, name, err)
	}
	return sa, nil
}

// GetServiceAccountToken requests a token for the service account
// namespace/name (serviceaccounts/<name>/token); as VolumeSources', the
// request must be bound to a pod, or it is refused with an error wrapping
// ErrInvalidArgument. The token is never logged.
func (s *ServiceAccounts) GetServiceAccountToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	return requestToken(ctx, s.client, namespace, name, req)
}
