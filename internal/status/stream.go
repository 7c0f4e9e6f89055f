package status

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kjson "sigs.k8s.io/json"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// The Polykube lists are read as a stream: the items of a page are split off the response as
// it arrives and each is decoded and reduced on its own, so that no page is ever held whole
// (not as bytes, not decoded). client-go's typed decode of a page reads the whole body, parses
// it once to find its kind and once more into a list of full objects: at C = 50 that was half
// of polykube-status's CPU and most of its peak memory. Paging stays client-go's pager.

// streamLister is a Reader that can also hand over the JSON of a list as it arrives; the
// Readers NewReader builds are. A Reader that is not (a test's) is listed through List.
type streamLister interface {
	// streamList GETs path (an API path: /apis/GROUP/VERSION[/namespaces/NS]/RESOURCE) with
	// params and returns the response body of a success; an error response is an API error
	// (apierrors.IsNotFound and the like work on it).
	streamList(ctx context.Context, path string, params url.Values) (io.ReadCloser, error)
}

// streamItems lists path, page by page through client-go's pager, and hands keep the JSON of
// every item (valid only during the call). As pagedLister.each, an expired continue token
// restarts the list whole after reset.
func (l pagedLister) streamItems(ctx context.Context, s streamLister, path string, params url.Values, keep func([]byte) error, reset func()) error {
	size := l.pageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	// One buffer per list, reused for every item.
	var item json.RawMessage
	page := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		p := url.Values{}
		for k, vs := range params {
			p[k] = vs
		}
		if o.Limit > 0 {
			p.Set("limit", strconv.FormatInt(o.Limit, 10))
		}
		if o.Continue != "" {
			p.Set("continue", o.Continue)
		}
		body, err := s.streamList(ctx, path, p)
		if err != nil {
			return nil, err
		}
		defer body.Close()
		list := &metav1.List{}
		if err := eachStreamedItem(body, &list.ListMeta, &item, keep); err != nil {
			return nil, fmt.Errorf("decode the list %s: %w", path, err)
		}
		return list, nil
	}
	pg := pager.New(page)
	pg.PageSize = size
	pg.PageBufferSize = 0
	// The items went to keep while their page was read: the pager sees empty pages.
	err := pg.EachListItem(ctx, metav1.ListOptions{}, func(runtime.Object) error { return nil })
	if err == nil || !apierrors.IsResourceExpired(err) {
		return err
	}
	reset()
	_, err = page(ctx, metav1.ListOptions{})
	return err
}

// eachStreamedItem reads a list's JSON from r: each element of "items" goes to keep as it is
// read (through buf), "metadata" into meta, the rest is skipped. It only finds where each value
// ends (decodeItem checks an item's syntax when it decodes it): encoding/json's Decoder scans a
// value twice to hand it over raw, and the lists are most of what a run reads.
func eachStreamedItem(r io.Reader, meta *metav1.ListMeta, buf *json.RawMessage, keep func([]byte) error) error {
	sc := valueScanner{r: bufio.NewReaderSize(r, 64<<10)}
	if err := sc.expect('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		c, err := sc.peek()
		if err != nil {
			return err
		}
		if c == '}' {
			_, _ = sc.r.ReadByte()
			return nil
		}
		if !first {
			if err := sc.expect(','); err != nil {
				return err
			}
		}
		if *buf, err = sc.value((*buf)[:0]); err != nil {
			return err
		}
		var key string
		if err := json.Unmarshal(*buf, &key); err != nil {
			return fmt.Errorf("a key of the list: %w", err)
		}
		if err := sc.expect(':'); err != nil {
			return err
		}
		switch key {
		case "items":
			if err := sc.eachElement(buf, keep); err != nil {
				return fmt.Errorf("items: %w", err)
			}
		case "metadata":
			if *buf, err = sc.value((*buf)[:0]); err != nil {
				return fmt.Errorf("metadata: %w", err)
			}
			if err := kjson.UnmarshalCaseSensitivePreserveInts(*buf, meta); err != nil {
				return fmt.Errorf("metadata: %w", err)
			}
		default:
			if *buf, err = sc.value((*buf)[:0]); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		}
	}
}

// valueScanner splits a JSON document into values without decoding them.
type valueScanner struct{ r *bufio.Reader }

// peek is the next byte after white space, not consumed.
func (s valueScanner) peek() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return 0, unexpectedEOF(err)
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c, s.r.UnreadByte()
	}
}

func (s valueScanner) expect(want byte) error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c != want {
		return fmt.Errorf("want %q, got %q", want, c)
	}
	_, _ = s.r.ReadByte()
	return nil
}

// eachElement hands keep each element of the array that comes next ("null" has none).
func (s valueScanner) eachElement(buf *json.RawMessage, keep func([]byte) error) error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c == 'n' {
		*buf, err = s.value((*buf)[:0])
		if err == nil && string(*buf) != "null" {
			err = fmt.Errorf("want an array, got %s", *buf)
		}
		return err
	}
	if err := s.expect('['); err != nil {
		return err
	}
	for i := 0; ; i++ {
		if c, err = s.peek(); err != nil {
			return err
		}
		if c == ']' {
			_, _ = s.r.ReadByte()
			return nil
		}
		if i > 0 {
			if err := s.expect(','); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		if *buf, err = s.value((*buf)[:0]); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
		if err := keep(*buf); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
	}
}

// value appends the next value to buf: an object or array up to its closing bracket (strings
// inside it skipped whole), a string up to its closing quote, a literal up to a delimiter.
func (s valueScanner) value(buf []byte) ([]byte, error) {
	c, err := s.peek()
	if err != nil {
		return buf, err
	}
	if c != '{' && c != '[' && c != '"' {
		// A number, true, false or null: up to the next delimiter.
		for {
			c, err := s.r.ReadByte()
			if err != nil {
				return buf, unexpectedEOF(err)
			}
			switch c {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return buf, s.r.UnreadByte()
			}
			buf = append(buf, c)
		}
	}
	depth, inString, escaped := 0, false, false
	for {
		if _, err := s.r.Peek(1); err != nil {
			return buf, unexpectedEOF(err)
		}
		chunk, _ := s.r.Peek(s.r.Buffered())
		for i, c := range chunk {
			if inString {
				switch {
				case escaped:
					escaped = false
				case c == '\\':
					escaped = true
				case c == '"':
					inString = false
					if depth == 0 {
						// A string on its own.
						buf = append(buf, chunk[:i+1]...)
						_, _ = s.r.Discard(i + 1)
						return buf, nil
					}
				}
				continue
			}
			switch c {
			case '"':
				inString = true
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					buf = append(buf, chunk[:i+1]...)
					_, _ = s.r.Discard(i + 1)
					return buf, nil
				}
			}
		}
		buf = append(buf, chunk...)
		_, _ = s.r.Discard(len(chunk))
	}
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// decodeItem decodes one list item as the API machinery does (case-sensitive field names).
func decodeItem(data []byte, into any) error {
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, into); err != nil {
		return err
	}
	return nil
}

// trimmed is data without surrounding white space: the key under which equal JSON values meet.
func trimmed(data []byte) []byte { return bytes.TrimSpace(data) }

// polykubeItems lists a Polykube resource (in namespace, or all when ""), streamed when the
// Reader can (keepRaw gets each item's JSON), else through List (keepObj gets each item).
func (l pagedLister) polykubeItems(ctx context.Context, resource, namespace string, newList func() client.ObjectList, opts []client.ListOption,
	keepRaw func([]byte) error, keepObj func(runtime.Object), reset func()) error {
	s, ok := l.r.(streamLister)
	if !ok {
		return l.each(ctx, newList, opts, keepObj, reset)
	}
	path := "/apis/" + polykubev1alpha1.GroupVersion.String()
	if namespace != "" {
		path += "/namespaces/" + namespace
	}
	return l.streamItems(ctx, s, path+"/"+resource, nil, keepRaw, reset)
}

// polykubeKind lists a Polykube resource whose items keep takes whole (decoded into a new T).
func polykubeKind[T any, PT interface {
	*T
	runtime.Object
}](ctx context.Context, l pagedLister, resource, namespace string, newList func() client.ObjectList, opts []client.ListOption, keep func(PT), reset func()) error {
	return l.polykubeItems(ctx, resource, namespace, newList, opts, func(raw []byte) error {
		o := PT(new(T))
		if err := decodeItem(raw, o); err != nil {
			return err
		}
		keep(o)
		return nil
	}, func(o runtime.Object) { keep(o.(PT)) }, reset)
}

// wireWorkload is a Workload item with its spec left as JSON, so that equal specs can be
// shared before they are decoded.
type wireWorkload struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        wireMeta                        `json:"metadata"`
	Spec            json.RawMessage                 `json:"spec"`
	Status          polykubev1alpha1.WorkloadStatus `json:"status"`
}

// wireMeta is an item's metadata without its managed fields, which no view reads: they are
// skipped while the item is decoded (they were about half of a Workload's bytes, and a copy of
// each was allocated only to be dropped).
type wireMeta struct {
	metav1.ObjectMeta `json:",inline"`
	// ManagedFields hides ObjectMeta's field of the same name.
	ManagedFields skipped `json:"managedFields"`
}

// skipped decodes nothing.
type skipped struct{}

func (*skipped) UnmarshalJSON([]byte) error { return nil }

// workloadCopyOf decodes a Workload item into its compact form, its spec shared through sh.
func workloadCopyOf(raw []byte, sh *sharer) (workloadCopy, error) {
	var w wireWorkload
	if err := decodeItem(raw, &w); err != nil {
		return workloadCopy{}, err
	}
	spec, err := sh.spec(w.Spec, func(s *polykubev1alpha1.WorkloadSpec) error {
		if len(trimmed(w.Spec)) == 0 {
			return nil
		}
		return decodeItem(w.Spec, s)
	})
	if err != nil {
		return workloadCopy{}, fmt.Errorf("Workload %s/%s: spec: %w", w.Metadata.Namespace, w.Metadata.Name, err)
	}
	return workloadCopy{meta: reducedMeta(w.Metadata.ObjectMeta), spec: spec, status: w.Status}, nil
}
