package source

import "errors"

// ErrInvalidOptions is wrapped by the errors of NewFile and NewURL when a
// required option is missing or a value is out of range.
var ErrInvalidOptions = errors.New("invalid options")

// ErrInvalidManifest is wrapped by the error of a manifest that cannot be
// decoded into a v1.Pod or a v1.PodList: not YAML or JSON, no apiVersion or
// kind, or a kind other than Pod and PodList.
var ErrInvalidManifest = errors.New("invalid manifest")

// ErrInvalidPod is wrapped by the error of a pod that was decoded but failed
// validation (ValidatePod: what the API server refuses in a pod it creates,
// such as no containers, a negative probe period or a path with ".."), or
// references API objects a static pod may not (APIObjectReference).
var ErrInvalidPod = errors.New("invalid pod")
