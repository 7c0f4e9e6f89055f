package incluster

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

// The operator's token is requested once per ServiceAccount: reused while that ServiceAccount
// is the cluster's, requested again once it was deleted and made anew (a Helm uninstall, then
// Flux delivering the operator again), whose old tokens the API server no longer accepts.
func TestOperatorToken_NewOnceTheServiceAccountIsMadeAnew(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "polykube-system", Name: "polykube-operator", UID: "uid-1"}}
	cs := fake.NewClientset(sa)
	requests := 0
	cs.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		requests++
		return true, &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: fmt.Sprint("token-", requests)}}, nil
	})
	admin := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "admin"}

	first, err := operatorToken(ctx, cs, admin, sa.Namespace, sa.Name, operatorConfig{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.cfg.BearerToken).To(Equal("token-1"))
	g.Expect(first.cfg.Host).To(Equal(admin.Host))

	again, err := operatorToken(ctx, cs, admin, sa.Namespace, sa.Name, first)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.cfg.BearerToken).To(Equal("token-1"), "the same ServiceAccount: the token is reused")
	g.Expect(requests).To(Equal(1))

	g.Expect(cs.CoreV1().ServiceAccounts(sa.Namespace).Delete(ctx, sa.Name, metav1.DeleteOptions{})).To(Succeed())
	_, err = operatorToken(ctx, cs, admin, sa.Namespace, sa.Name, again)
	g.Expect(err).To(MatchError(ContainSubstring("get the operator's ServiceAccount polykube-system/polykube-operator")))

	made := sa.DeepCopy()
	made.UID = "uid-2"
	_, err = cs.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, made, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	renewed, err := operatorToken(ctx, cs, admin, sa.Namespace, sa.Name, again)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(renewed.cfg.BearerToken).To(Equal("token-2"), "a ServiceAccount made anew: a new token")
	g.Expect(renewed.uid).To(BeEquivalentTo("uid-2"))
}
