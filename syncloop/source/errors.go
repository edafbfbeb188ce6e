package source

import "errors"

// ErrInvalidOptions is wrapped by the errors of NewFile and NewURL when a
// required option is missing or a value is out of range.
var ErrInvalidOptions = errors.New("invalid options")

// ErrInvalidManifest is wrapped by the error of a manifest that cannot be
// decoded into a v1.Pod or a v1.PodList: not YAML or JSON, no apiVersion or
// kind, or a kind other than Pod and PodList.
var ErrInvalidManifest = errors.New("invalid manifest")
